/**
 * SQLite storage of one generation (one Durable Object per generation).
 *
 * Guarantees:
 * - The schema is versioned by a row in `meta` and migrated by an ordered list, each step in
 *   the caller's transaction; a newer schema than this code knows is refused, never guessed.
 * - Reading never writes: an object that was never registered has no tables and answers
 *   "absent" without creating any, so probing random ids costs no storage.
 * - A saved record round-trips exactly (integers stay integers).
 *
 * Does not: decide anything (see machine.ts) or open transactions (the object wraps
 * load → decide → save in one `transactionSync`).
 */
import type { GenerationRecord } from "../protocol/generations.ts";
import { isGenerationState } from "../core/generation-machine.ts";

/** The schema version this code writes. */
export const GENERATION_SCHEMA_VERSION = 1;

/** Ordered migrations: entry i takes the schema from version i to i + 1. */
const MIGRATIONS: readonly string[] = [
  `CREATE TABLE IF NOT EXISTS generation (
     id TEXT PRIMARY KEY,
     service TEXT NOT NULL,
     instance_id TEXT NOT NULL,
     state TEXT NOT NULL,
     started_at_ms INTEGER NOT NULL,
     updated_at_ms INTEGER NOT NULL,
     reason TEXT NOT NULL
   )`,
];

interface GenerationRow extends Record<string, SqlStorageValue> {
  id: string;
  service: string;
  instance_id: string;
  state: string;
  started_at_ms: number;
  updated_at_ms: number;
  reason: string;
}

export class GenerationStore {
  constructor(private readonly sql: SqlStorage) {}

  /** The stored schema version, 0 when the object has never been written. */
  schemaVersion(): number {
    const hasMeta = this.sql.exec("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'").toArray();
    if (hasMeta.length === 0) return 0;
    const row = this.sql.exec<{ value: number }>("SELECT value FROM meta WHERE key = 'schema_version'").toArray().at(0);
    return row?.value ?? 0;
  }

  /** Bring the schema up to {@link GENERATION_SCHEMA_VERSION}. Call inside a write transaction. */
  migrate(): void {
    const current = this.schemaVersion();
    if (current > GENERATION_SCHEMA_VERSION) {
      throw new Error(`generation schema ${current} is newer than this code (${GENERATION_SCHEMA_VERSION})`);
    }
    if (current === GENERATION_SCHEMA_VERSION) return;
    this.sql.exec("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL)");
    for (let version = current; version < GENERATION_SCHEMA_VERSION; version++) {
      const step = MIGRATIONS[version];
      if (step === undefined) throw new Error(`no migration from generation schema ${version}`);
      this.sql.exec(step);
    }
    this.sql.exec(
      "INSERT INTO meta (key, value) VALUES ('schema_version', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
      GENERATION_SCHEMA_VERSION,
    );
  }

  /** The stored record, or undefined when none was ever registered here. */
  load(): GenerationRecord | undefined {
    const version = this.schemaVersion();
    if (version === 0) return undefined;
    if (version > GENERATION_SCHEMA_VERSION) {
      throw new Error(`generation schema ${version} is newer than this code (${GENERATION_SCHEMA_VERSION})`);
    }
    const row = this.sql.exec<GenerationRow>("SELECT * FROM generation LIMIT 1").toArray().at(0);
    if (row === undefined) return undefined;
    if (!isGenerationState(row.state)) throw new Error(`stored generation has unknown state ${row.state}`);
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

  /** Insert or replace the record (migrating first). Call inside a write transaction. */
  save(record: GenerationRecord): void {
    this.migrate();
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
  }
}
