/**
 * The stored operation records of one object (docs/protocol.md#operation-ids): what a retry
 * with the same operation id is answered from. Shared by the claim and generation stores.
 *
 * Guarantees:
 * - {@link OperationLog.remember} runs inside the caller's write transaction: the record
 *   commits with the change it answers, or not at all.
 * - Records are pruned only when both retention bounds of core/claim-operations.ts are
 *   exceeded (≥ 1,000 newer records and older than one hour), oldest first, at most two per
 *   new record (so pruning keeps pace with inserts and never scans the retained ones).
 *
 * Does not: create its table (the store's migrations do: {@link OPERATIONS_TABLE}), compare
 * fingerprints (core/claim-operations.ts `replay` does), or decide what is remembered.
 */
import { OPERATION_RETENTION_COUNT, OPERATION_RETENTION_MS } from "../core/claim-operations.ts";
import type { OperationRecord } from "../core/claim-operations.ts";
import type { WireResponse } from "../protocol/wire-response.ts";

/** The table every store that replays operation ids creates in its migrations. */
export const OPERATIONS_TABLE = `CREATE TABLE IF NOT EXISTS operations (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  operation_id TEXT NOT NULL UNIQUE,
  fingerprint TEXT NOT NULL,
  status INTEGER NOT NULL,
  body TEXT NOT NULL,
  at_ms INTEGER NOT NULL
)`;

/** Operation records pruned at most per new record: more than one, so a backlog drains. */
const OPERATIONS_PRUNED_PER_INSERT = 2;

export class OperationLog {
  constructor(private readonly sql: SqlStorage) {}

  /** The stored record for `operationId`, if still retained. Call only once the table exists. */
  find(operationId: string): OperationRecord | undefined {
    const row = this.sql
      .exec<{ fingerprint: string; status: number; body: string; at_ms: number }>(
        "SELECT fingerprint, status, body, at_ms FROM operations WHERE operation_id = ?",
        operationId,
      )
      .toArray()[0];
    if (row === undefined) return undefined;
    const response: WireResponse = { status: row.status, body: JSON.parse(row.body) as object };
    return { operationId, fingerprint: row.fingerprint, response, atMs: row.at_ms };
  }

  /** Store `op` and prune what both retention bounds let go. Call inside a write transaction. */
  remember(op: OperationRecord): void {
    const { seq } = this.sql
      .exec<{ seq: number }>(
        "INSERT INTO operations (operation_id, fingerprint, status, body, at_ms) VALUES (?, ?, ?, ?, ?) RETURNING seq",
        op.operationId,
        op.fingerprint,
        op.response.status,
        JSON.stringify(op.response.body),
        op.atMs,
      )
      .one();
    // Prunable = at least OPERATION_RETENTION_COUNT newer records AND older than the window.
    // `seq` only grows (AUTOINCREMENT; only the oldest are deleted), so a record has at least
    // that many newer ones exactly when its seq is ≤ seq − OPERATION_RETENTION_COUNT. Only the
    // oldest record is looked at: if it must stay, so do the rest (they are newer), and a
    // clock that went back only delays pruning, never prunes early.
    const boundarySeq = seq - OPERATION_RETENTION_COUNT;
    const cutoffMs = op.atMs - OPERATION_RETENTION_MS;
    for (let i = 0; i < OPERATIONS_PRUNED_PER_INSERT; i++) {
      const oldest = this.sql
        .exec<{ seq: number; at_ms: number }>("SELECT seq, at_ms FROM operations ORDER BY seq ASC LIMIT 1")
        .one();
      if (oldest.seq > boundarySeq || oldest.at_ms >= cutoffMs) return;
      this.sql.exec("DELETE FROM operations WHERE seq = ?", oldest.seq);
    }
  }
}
