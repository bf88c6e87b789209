/**
 * The claim's durable state in the Durable Object's SQLite database: one claim row, the
 * retained event history and the operation-id replay records.
 *
 * Guarantees:
 * - {@link ClaimStore.commit} writes the record, its events, the operation record and the
 *   listing index's outbox row in ONE synchronous transaction: all of them or none.
 * - The fencing token lives in the claim row, which is never deleted. It only moves through
 *   a guarded `UPDATE … WHERE fencing_token = <previous> AND version = <previous>` (the same
 *   statement writes the rest of the record: one row written); a token that would move by
 *   anything but +1, or whose stored value is not what the caller decided from, aborts the
 *   transaction (a bug, surfaced as `internal`, never a silent reuse).
 * - Counters are stored as decimal TEXT (tokens reach 2^64−2, beyond SQLite's INTEGER and
 *   JavaScript's exact numbers). Events are keyed by version, also TEXT, zero-padded to 20
 *   digits so that SQLite's text order is numeric order.
 * - At least the newest `RETAINED_EVENTS` (protocol/watch.ts) events are kept;
 *   `events_pruned_through` remembers the highest pruned version so a watcher can tell
 *   whether history reaches it. Events are pruned in batches (durable/history-pruning.ts):
 *   one commit in 64 deletes the 64 beyond the bound and writes `events_pruned_through`
 *   once, instead of one `DELETE` and one meta write per event (the history holds 256–319
 *   events). Pruning reads only the rows it deletes: the number of retained events is
 *   counted once when the store opens (one `COUNT`, at most 319 rows read per start-up) and
 *   then kept in memory, updated only after a commit succeeded (docs/performance.md "Rows
 *   per operation").
 * - Operation records follow durable/operation-log.ts (retention, pruning).
 * - The schema follows the one migration rule of durable/migrations.ts ({@link CLAIM_SCHEMA}
 *   is lazy): migrated at start-up when the object has data, or inside the first write's
 *   transaction, so reading a claim that was never created leaves its storage empty; a
 *   schema newer than the code is refused (`internal`) rather than misread.
 *
 * Does not: decide anything (core/claim-machine.ts does), arm alarms or talk to sockets.
 */
import type { ClaimPhase, ClaimReason, ClaimRecord } from "../protocol/claims.ts";
import { claimToWire } from "../protocol/claims.ts";
import { formatCounter, sortableCounter } from "../protocol/counter.ts";
import { encodeOnce } from "../protocol/encode-once.ts";
import { ShiftlockError } from "../protocol/errors.ts";
import type { ClaimEvent, ClaimStep } from "../core/claim-machine.ts";
import type { OperationRecord } from "../core/claim-operations.ts";
import { planClaimReplay } from "../core/claim-replay.ts";
import { OUTBOX_DELIVERED_MIGRATION, OUTBOX_MIGRATION, OUTBOX_NAMESPACE_MIGRATION } from "../durable/index-outbox.ts";
import { MigratedStore, type StoreSchema } from "../durable/migrations.ts";
import { entriesToPrune } from "../durable/history-pruning.ts";
import { OPERATIONS_TABLE, OperationLog } from "../durable/operation-log.ts";

/** The claim store's schema: ordered migrations, no tables until the first write. */
const CLAIM_SCHEMA: StoreSchema = {
  name: "claim",
  lazy: true,
  // `meta` (TEXT values: the schema version, events_pruned_through) is the runner's table.
  migrations: [
    `CREATE TABLE IF NOT EXISTS claim (
       id INTEGER PRIMARY KEY CHECK (id = 1),
       name TEXT NOT NULL,
       owner_generation TEXT NOT NULL,
       fencing_token TEXT NOT NULL,
       phase TEXT NOT NULL,
       acquired_at_ms INTEGER NOT NULL,
       expires_at_ms INTEGER NOT NULL,
       previous_owner TEXT NOT NULL,
       pending_successor TEXT NOT NULL,
       drain_status TEXT NOT NULL,
       transfer_status TEXT NOT NULL,
       last_heartbeat_ms INTEGER NOT NULL,
       reason TEXT NOT NULL,
       version TEXT NOT NULL
     );
     CREATE TABLE IF NOT EXISTS events (version TEXT PRIMARY KEY, message TEXT NOT NULL) WITHOUT ROWID;
     ${OPERATIONS_TABLE};`,
    // 2: the listing index's outbox (durable/index-outbox.ts).
    OUTBOX_MIGRATION,
    // 3: the outbox remembers what its shard acknowledged (no re-send after a restart).
    OUTBOX_DELIVERED_MIGRATION,
    // 4: bound claims (docs/protocol.md#sessions): held under the owner generation's lease epoch.
    `ALTER TABLE claim ADD COLUMN bound INTEGER NOT NULL DEFAULT 0;
     ALTER TABLE claim ADD COLUMN lease_epoch TEXT NOT NULL DEFAULT '0';`,
    // 5: the outbox keeps the object's namespace (an instance started without a name delivers).
    OUTBOX_NAMESPACE_MIGRATION,
  ],
};

/** The JSON text of a watch event message, as stored and as sent: rendered once per event. */
export const eventMessage: (event: ClaimEvent) => string = encodeOnce((event: ClaimEvent) => {
  const message = { type: "event", reason: event.reason, claim: claimToWire(event.claim), timeMs: event.timeMs };
  return JSON.stringify(event.note === undefined ? message : { ...message, note: event.note });
});

const versionKey = sortableCounter;

type ClaimRow = {
  name: string;
  owner_generation: string;
  fencing_token: string;
  phase: string;
  acquired_at_ms: number;
  expires_at_ms: number;
  previous_owner: string;
  pending_successor: string;
  drain_status: string;
  transfer_status: string;
  last_heartbeat_ms: number;
  reason: string;
  version: string;
  bound: number;
  lease_epoch: string;
};

/** Replay answer for `afterVersion`: retained event messages, or `truncated`. */
export type History = { kind: "events"; messages: string[] } | { kind: "truncated" };

export class ClaimStore extends MigratedStore {
  /** Events in the `events` table (known from `open()` on; 0 while there are no tables). */
  private retainedEvents = 0;

  private readonly operations: OperationLog;

  constructor(storage: DurableObjectStorage) {
    super(storage, CLAIM_SCHEMA);
    this.operations = new OperationLog(this.sql);
  }

  /** Migrate (see MigratedStore) and count the retained events once. */
  override open(): void {
    super.open();
    if (this.ready) {
      this.retainedEvents = this.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM events").one().n;
    }
  }

  /** False until the schema exists: an object only ever read stays empty (docs/protocol.md: reading never creates). */
  private get ready(): boolean {
    return this.schema.ready;
  }

  private meta(key: string): string | undefined {
    const row = this.sql.exec<{ value: string }>("SELECT value FROM meta WHERE key = ?", key).toArray()[0];
    return row?.value;
  }

  private setMeta(key: string, value: string): void {
    this.sql.exec(
      "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
      key,
      value,
    );
  }

  /** The current record, or undefined when the claim was never created. */
  load(): ClaimRecord | undefined {
    if (!this.ready) return undefined;
    const row = this.sql.exec<ClaimRow>("SELECT * FROM claim WHERE id = 1").toArray()[0];
    if (row === undefined) return undefined;
    return {
      name: row.name,
      ownerGeneration: row.owner_generation,
      fencingToken: BigInt(row.fencing_token),
      phase: row.phase as ClaimPhase,
      acquiredAtMs: row.acquired_at_ms,
      expiresAtMs: row.expires_at_ms,
      previousOwner: row.previous_owner,
      pendingSuccessor: row.pending_successor,
      drainStatus: row.drain_status as ClaimRecord["drainStatus"],
      transferStatus: row.transfer_status as ClaimRecord["transferStatus"],
      lastHeartbeatMs: row.last_heartbeat_ms,
      reason: row.reason as ClaimReason,
      version: BigInt(row.version),
      bound: row.bound === 1,
      leaseEpoch: BigInt(row.lease_epoch),
    };
  }

  /** The stored operation record for `operationId`, if still retained. */
  findOperation(operationId: string): OperationRecord | undefined {
    return this.ready ? this.operations.find(operationId) : undefined;
  }

  /**
   * Persist one decided step: the record (if changed), its events, the operation record and
   * (through `stage`) the index outbox row, atomically. `previous` is the record the step
   * was decided from.
   */
  commit(
    previous: ClaimRecord | undefined,
    step: ClaimStep,
    operation: OperationRecord | undefined,
    stage?: (next: ClaimRecord) => void,
  ): void {
    if (!step.changed && step.events.length === 0 && operation === undefined) return;
    const retained = this.write(() => {
      if (step.changed && step.next !== undefined) {
        this.writeRecord(previous, step.next, step.tokenAdvanced);
        stage?.(step.next);
      }
      for (const event of step.events) this.appendEvent(event);
      const count = this.pruneEvents(this.retainedEvents + step.events.length);
      if (operation !== undefined) this.operations.remember(operation);
      return count;
    });
    // Only now: a transaction that threw rolled its events back, and the count stays.
    this.retainedEvents = retained;
  }

  private writeRecord(previous: ClaimRecord | undefined, next: ClaimRecord, tokenAdvanced: boolean): void {
    const before = previous?.fencingToken ?? 0n;
    if (previous === undefined) {
      // The row is born with token 0; the guarded update below is the only way it grows.
      this.sql.exec(
        `INSERT INTO claim (id, name, owner_generation, fencing_token, phase, acquired_at_ms, expires_at_ms,
           previous_owner, pending_successor, drain_status, transfer_status, last_heartbeat_ms, reason, version)
         VALUES (1, ?, '', '0', 'unowned', 0, 0, '', '', '', '', 0, '', '0')`,
        next.name,
      );
    }
    if (tokenAdvanced && next.fencingToken !== before + 1n) {
      throw new ShiftlockError("internal", "fencing token must advance by 1");
    }
    if (!tokenAdvanced && next.fencingToken !== before) {
      throw new ShiftlockError("internal", "fencing token changed without advancing");
    }
    // One guarded update of the one row (one row written): it applies only where both the
    // token and the version are still the ones the decision started from.
    const updated = this.sql
      .exec(
        `UPDATE claim SET fencing_token = ?, owner_generation = ?, phase = ?, acquired_at_ms = ?, expires_at_ms = ?,
           previous_owner = ?, pending_successor = ?, drain_status = ?, transfer_status = ?, last_heartbeat_ms = ?,
           reason = ?, version = ?, bound = ?, lease_epoch = ?
         WHERE id = 1 AND fencing_token = ? AND version = ? RETURNING version`,
        formatCounter(next.fencingToken),
        next.ownerGeneration,
        next.phase,
        next.acquiredAtMs,
        next.expiresAtMs,
        next.previousOwner,
        next.pendingSuccessor,
        next.drainStatus,
        next.transferStatus,
        next.lastHeartbeatMs,
        next.reason,
        formatCounter(next.version),
        next.bound ? 1 : 0,
        formatCounter(next.leaseEpoch),
        formatCounter(before),
        formatCounter(previous?.version ?? 0n),
      )
      .toArray();
    if (updated.length !== 1) {
      throw new ShiftlockError("internal", "fencing token or version changed underneath the decision");
    }
  }

  private appendEvent(event: ClaimEvent): void {
    this.sql.exec(
      "INSERT INTO events (version, message) VALUES (?, ?)",
      versionKey(event.claim.version),
      eventMessage(event),
    );
  }

  /** Delete the oldest events beyond the retention once a batch of them is due; returns how many remain. */
  private pruneEvents(retained: number): number {
    const excess = entriesToPrune(retained);
    if (excess === 0) return retained;
    // The newest of the `excess` oldest: reads exactly the rows about to be deleted.
    const cutoff = this.sql
      .exec<{ version: string }>("SELECT version FROM events ORDER BY version ASC LIMIT 1 OFFSET ?", excess - 1)
      .one();
    this.sql.exec("DELETE FROM events WHERE version <= ?", cutoff.version);
    this.setMeta("events_pruned_through", formatCounter(BigInt(cutoff.version)));
    return retained - excess;
  }

  /**
   * Retained events with version > `afterVersion`, oldest first; `truncated` when history no
   * longer reaches `afterVersion` (pruned past it) or `afterVersion` is beyond the record.
   */
  history(afterVersion: bigint, current: ClaimRecord | undefined): History {
    const plan = planClaimReplay(afterVersion, current?.version ?? 0n, this.prunedThrough());
    if (plan.kind !== "events") return { kind: "truncated" };
    if (!this.ready) return { kind: "events", messages: [] };
    const messages = this.sql
      .exec<{ message: string }>(
        "SELECT message FROM events WHERE version > ? ORDER BY version ASC",
        versionKey(afterVersion),
      )
      .toArray()
      .map((r) => r.message);
    return { kind: "events", messages };
  }

  /** How many retained events have a version in (`after`, `through`]. */
  countEvents(after: bigint, through: bigint): number {
    if (!this.ready) return 0;
    return this.sql
      .exec<{ n: number }>(
        "SELECT COUNT(*) AS n FROM events WHERE version > ? AND version <= ?",
        versionKey(after),
        versionKey(through),
      )
      .one().n;
  }

  /** The highest version whose event may have been pruned (0: history is complete). */
  prunedThrough(): bigint {
    if (!this.ready) return 0n;
    return BigInt(this.meta("events_pruned_through") ?? "0");
  }
}
