/**
 * SQLite storage of one generation (one Durable Object per generation).
 *
 * Guarantees:
 * - The schema follows the one migration rule of durable/migrations.ts
 *   ({@link GENERATION_SCHEMA}): migrated at start-up when the object has data, or inside the
 *   first write's transaction; a schema newer than this code is refused (`internal`).
 * - Reading never writes: an object that was never registered has no tables and answers
 *   "absent" without creating any, so probing random ids costs no storage.
 * - A saved record round-trips exactly (integers stay integers); a stored state this code
 *   does not know is `internal`, never guessed.
 * - The lease (docs/protocol.md#sessions): the record's row also holds the last written
 *   deadline and the unwritten promises' ttls of core/generation-lease.ts; a keepalive whose
 *   ttl they cover writes nothing, one with a longer ttl writes that one row.
 * - The bound claims: one row per claim this generation's epochs bind (`bound_claims`, with
 *   the epoch). A claim's row is replaced when a later epoch binds it, deleted when the
 *   claim acknowledges the end of its epoch or unbinds; rows of an epoch that ended are the
 *   deliveries still owed, so a restart resumes them.
 *
 * Does not: decide anything (core/generation-machine.ts does).
 */
import type { GenerationRecord } from "../protocol/generations.ts";
import type { LeasePromises } from "../core/generation-lease.ts";
import { formatCounter, sortableCounter } from "../protocol/counter.ts";
import { ShiftlockError } from "../protocol/errors.ts";
import { isGenerationState } from "../core/generation-machine.ts";
import type { OperationRecord } from "../core/claim-operations.ts";
import { OUTBOX_DELIVERED_MIGRATION, OUTBOX_MIGRATION, OUTBOX_NAMESPACE_MIGRATION } from "../durable/index-outbox.ts";
import { MigratedStore, type StoreSchema } from "../durable/migrations.ts";
import { OPERATIONS_TABLE, OperationLog } from "../durable/operation-log.ts";

/** The generation store's schema: ordered migrations, no tables until the first write. */
const GENERATION_SCHEMA: StoreSchema = {
  name: "generation",
  lazy: true,
  migrations: [
    // `meta` stores INTEGER values here (TEXT in the other stores): existing objects keep the type.
    `CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
     CREATE TABLE IF NOT EXISTS generation (
       id TEXT PRIMARY KEY,
       service TEXT NOT NULL,
       instance_id TEXT NOT NULL,
       state TEXT NOT NULL,
       started_at_ms INTEGER NOT NULL,
       updated_at_ms INTEGER NOT NULL,
       reason TEXT NOT NULL
     )`,
    // 2: the listing index's outbox (durable/index-outbox.ts).
    OUTBOX_MIGRATION,
    // 3: the outbox remembers what its shard acknowledged (no re-send after a restart).
    OUTBOX_DELIVERED_MIGRATION,
    // 4: the generation's lease, the claims its epochs bind, and operation-id replay.
    `ALTER TABLE generation ADD COLUMN lease_epoch TEXT NOT NULL DEFAULT '0';
     ALTER TABLE generation ADD COLUMN lease_expires_at_ms INTEGER NOT NULL DEFAULT 0;
     ALTER TABLE generation ADD COLUMN http_horizon_ms INTEGER NOT NULL DEFAULT 0;
     ALTER TABLE generation ADD COLUMN channel_horizon_ms INTEGER NOT NULL DEFAULT 0;
     -- epoch: 20 zero-padded digits (text order = numeric order)
     CREATE TABLE IF NOT EXISTS bound_claims (name TEXT PRIMARY KEY, epoch TEXT NOT NULL) WITHOUT ROWID;
     ${OPERATIONS_TABLE};`,
    // 5: the outbox keeps the object's namespace (an instance started without a name delivers).
    OUTBOX_NAMESPACE_MIGRATION,
    // 6: promises kept as ttls instead of absolute horizons; a horizon's promises go into the
    // deadline (this runs in a fresh instance, which would have served the horizon anyway).
    `UPDATE generation SET lease_expires_at_ms = MAX(lease_expires_at_ms, http_horizon_ms, channel_horizon_ms)
       WHERE lease_expires_at_ms > 0;
     ALTER TABLE generation RENAME COLUMN http_horizon_ms TO http_promise_ttl_ms;
     ALTER TABLE generation RENAME COLUMN channel_horizon_ms TO channel_promise_ttl_ms;
     UPDATE generation SET http_promise_ttl_ms = 0, channel_promise_ttl_ms = 0;`,
  ],
};

/** A claim bound to an epoch of this generation. */
export interface BoundClaim {
  name: string;
  epoch: bigint;
}

interface GenerationRow extends Record<string, SqlStorageValue> {
  id: string;
  service: string;
  instance_id: string;
  state: string;
  started_at_ms: number;
  updated_at_ms: number;
  reason: string;
  lease_epoch: string;
  lease_expires_at_ms: number;
  http_promise_ttl_ms: number;
  channel_promise_ttl_ms: number;
}

export class GenerationStore extends MigratedStore {
  private readonly operations: OperationLog;

  constructor(storage: DurableObjectStorage) {
    super(storage, GENERATION_SCHEMA);
    this.operations = new OperationLog(this.sql);
  }

  /**
   * The stored record (its `leaseExpiresAtMs` the deadline last written) with its unwritten
   * promises, or undefined when none was ever registered here.
   */
  load(): { record: GenerationRecord; promises: LeasePromises } | undefined {
    if (!this.schema.ready) return undefined;
    const row = this.sql.exec<GenerationRow>("SELECT * FROM generation LIMIT 1").toArray().at(0);
    if (row === undefined) return undefined;
    if (!isGenerationState(row.state)) throw new ShiftlockError("internal", `stored generation has unknown state`);
    const record: GenerationRecord = {
      id: row.id,
      service: row.service,
      instanceId: row.instance_id,
      state: row.state,
      startedAtMs: row.started_at_ms,
      updatedAtMs: row.updated_at_ms,
      reason: row.reason,
      leaseExpiresAtMs: row.lease_expires_at_ms,
      leaseEpoch: BigInt(row.lease_epoch),
    };
    return { record, promises: { httpTtlMs: row.http_promise_ttl_ms, channelTtlMs: row.channel_promise_ttl_ms } };
  }

  /**
   * Insert or replace the record with its unwritten promises, remember the operation (if any),
   * and stage the record for the index, in one transaction (creating the schema first).
   */
  save(
    record: GenerationRecord,
    promises: LeasePromises,
    operation?: OperationRecord,
    stage?: (record: GenerationRecord) => void,
  ): void {
    this.write(() => {
      this.sql.exec(
        `INSERT INTO generation (id, service, instance_id, state, started_at_ms, updated_at_ms, reason,
           lease_epoch, lease_expires_at_ms, http_promise_ttl_ms, channel_promise_ttl_ms)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (id) DO UPDATE SET
         service = excluded.service, instance_id = excluded.instance_id, state = excluded.state,
         started_at_ms = excluded.started_at_ms, updated_at_ms = excluded.updated_at_ms, reason = excluded.reason,
         lease_epoch = excluded.lease_epoch, lease_expires_at_ms = excluded.lease_expires_at_ms,
         http_promise_ttl_ms = excluded.http_promise_ttl_ms, channel_promise_ttl_ms = excluded.channel_promise_ttl_ms`,
        record.id,
        record.service,
        record.instanceId,
        record.state,
        record.startedAtMs,
        record.updatedAtMs,
        record.reason,
        formatCounter(record.leaseEpoch),
        record.leaseExpiresAtMs,
        promises.httpTtlMs,
        promises.channelTtlMs,
      );
      if (operation !== undefined) this.operations.remember(operation);
      stage?.(record);
    });
  }

  /** Remember an operation's answer alone (a refusal, or a success that wrote nothing else). */
  remember(operation: OperationRecord): void {
    this.write(() => this.operations.remember(operation));
  }

  /** The stored operation record for `operationId`, if still retained. */
  findOperation(operationId: string): OperationRecord | undefined {
    return this.schema.ready ? this.operations.find(operationId) : undefined;
  }

  /** Record that `epoch` binds claim `name` (one row; none when it already does). */
  bind(name: string, epoch: bigint): void {
    this.write(() => {
      this.sql.exec(
        `INSERT INTO bound_claims (name, epoch) VALUES (?, ?)
         ON CONFLICT (name) DO UPDATE SET epoch = excluded.epoch WHERE epoch <> excluded.epoch`,
        name,
        sortableCounter(epoch),
      );
    });
  }

  /** Forget claim `name` if an epoch up to `epoch` binds it (its acknowledgement, or its release). */
  unbind(name: string, epoch: bigint): void {
    if (!this.schema.ready) return;
    this.sql.exec("DELETE FROM bound_claims WHERE name = ? AND epoch <= ?", name, sortableCounter(epoch));
  }

  /** Claims bound to an epoch up to `epoch` (the deliveries owed once it ended), at most `limit`. */
  boundThrough(epoch: bigint, limit: number): BoundClaim[] {
    if (!this.schema.ready) return [];
    return this.sql
      .exec<{ name: string; epoch: string }>(
        "SELECT name, epoch FROM bound_claims WHERE epoch <= ? LIMIT ?",
        sortableCounter(epoch),
        limit,
      )
      .toArray()
      .map((row) => ({ name: row.name, epoch: BigInt(row.epoch) }));
  }
}
