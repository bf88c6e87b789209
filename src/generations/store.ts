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
 *
 * Does not: decide anything (core/generation-machine.ts does).
 */
import type { GenerationRecord } from "../protocol/generations.ts";
import { ShiftlockError } from "../protocol/errors.ts";
import { isGenerationState } from "../core/generation-machine.ts";
import { OUTBOX_DELIVERED_MIGRATION, OUTBOX_MIGRATION, OUTBOX_NAMESPACE_MIGRATION } from "../durable/index-outbox.ts";
import { MigratedStore, type StoreSchema } from "../durable/migrations.ts";

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
    // 4: the outbox keeps the object's namespace (an instance started without a name delivers).
    OUTBOX_NAMESPACE_MIGRATION,
  ],
};

interface GenerationRow extends Record<string, SqlStorageValue> {
  id: string;
  service: string;
  instance_id: string;
  state: string;
  started_at_ms: number;
  updated_at_ms: number;
  reason: string;
}

export class GenerationStore extends MigratedStore {
  constructor(storage: DurableObjectStorage) {
    super(storage, GENERATION_SCHEMA);
  }

  /** The stored record, or undefined when none was ever registered here. */
  load(): GenerationRecord | undefined {
    if (!this.schema.ready) return undefined;
    const row = this.sql.exec<GenerationRow>("SELECT * FROM generation LIMIT 1").toArray().at(0);
    if (row === undefined) return undefined;
    if (!isGenerationState(row.state)) throw new ShiftlockError("internal", `stored generation has unknown state`);
    return {
      id: row.id,
      service: row.service,
      instanceId: row.instance_id,
      state: row.state,
      startedAtMs: row.started_at_ms,
      updatedAtMs: row.updated_at_ms,
      reason: row.reason,
    };
  }

  /** Insert or replace the record, and stage it for the index, in one transaction (creating the schema first). */
  save(record: GenerationRecord, stage?: (record: GenerationRecord) => void): void {
    this.write(() => {
      this.sql.exec(
        `INSERT INTO generation (id, service, instance_id, state, started_at_ms, updated_at_ms, reason)
       VALUES (?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (id) DO UPDATE SET
         service = excluded.service, instance_id = excluded.instance_id, state = excluded.state,
         started_at_ms = excluded.started_at_ms, updated_at_ms = excluded.updated_at_ms, reason = excluded.reason`,
        record.id,
        record.service,
        record.instanceId,
        record.state,
        record.startedAtMs,
        record.updatedAtMs,
        record.reason,
      );
      stage?.(record);
    });
  }
}
