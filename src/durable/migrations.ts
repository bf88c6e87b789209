/**
 * Schema migrations of a Durable Object's SQLite store: one rule for every store.
 *
 * Guarantees:
 * - Each store declares an ordered list of migrations; entry i takes the schema from version
 *   i to i + 1, so the version this code writes is the list's length. The stored version is
 *   one row, `meta.schema_version`, written in the same transaction as the migrations it
 *   records: a crash leaves the old schema or the new one, never half of it.
 * - A store that finds a NEWER version than it knows refuses with `ShiftlockError("internal")`
 *   rather than misread rows. The objects open their stores at start-up (inside
 *   `blockConcurrencyWhile`), so such an object refuses to start and serves nothing. Only a
 *   deployment can write a newer schema, and a deployment restarts every object, so the
 *   check at start-up (and before a lazy store's first write) is the only one needed.
 * - A lazy store (claims, generations) that has no tables yet is left without any until its
 *   first write: reading a claim or generation that was never created writes nothing.
 *   The first write migrates inside that write's own transaction ({@link SchemaMigrations.write}).
 *
 * Does not: run JavaScript data migrations (each step is SQL text), or downgrade.
 */
import { ShiftlockError } from "../protocol/errors.ts";

/** What a store declares about its schema. */
export interface StoreSchema {
  /** What the store holds, for messages ("claim", "scope", "generation"). */
  readonly name: string;
  /** Ordered migrations; entry i takes the schema from version i to i + 1. */
  readonly migrations: readonly string[];
  /** True: no tables until the first write (see the module comment). */
  readonly lazy: boolean;
  /**
   * The version of an object written before its version lived in `meta`, or undefined when
   * none is recorded elsewhere. Reads only.
   */
  readonly legacyVersion?: (sql: SqlStorage) => number | undefined;
}

/** True when `table` exists. Reads only. */
export function hasTable(sql: SqlStorage, table: string): boolean {
  return sql.exec("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", table).toArray().length > 0;
}

/** One store's schema, brought up to date once per instance. */
export class SchemaMigrations {
  /** True once this instance knows the schema is current (tables exist). */
  private current = false;

  constructor(
    private readonly storage: DurableObjectStorage,
    private readonly schema: StoreSchema,
  ) {}

  /** The version this code writes. */
  get latest(): number {
    return this.schema.migrations.length;
  }

  /** True once the store has tables (found at start-up, or created by the first write). */
  get ready(): boolean {
    return this.current;
  }

  /**
   * Start-up, inside `blockConcurrencyWhile`: migrate a store that has data (every store,
   * unless lazy) and refuse a newer schema. A lazy store without data stays empty.
   */
  open(): void {
    const stored = this.stored();
    // Current already (every start-up but the first after a deploy that migrates): no
    // transaction, nothing read twice.
    if (stored === this.latest) this.current = true;
    else if (!this.schema.lazy || stored > 0) this.ensure();
  }

  /**
   * Run one write transaction, creating or upgrading the schema inside it first when this
   * instance has not yet. The schema counts as current only once that transaction commits:
   * a write that fails rolls its migration back too, and the next write migrates again.
   */
  write<T>(fn: () => T): T {
    if (this.current) return this.storage.transactionSync(fn);
    const result = this.storage.transactionSync(() => {
      this.migrate();
      return fn();
    });
    this.current = true;
    return result;
  }

  /** Create or upgrade the schema in one transaction of its own. */
  private ensure(): void {
    this.storage.transactionSync(() => this.migrate());
    this.current = true;
  }

  /** Run the missing migrations and record the version. Call inside a transaction. */
  private migrate(): void {
    const from = this.stored();
    const sql = this.storage.sql;
    for (let version = from; version < this.latest; version++) sql.exec(this.schema.migrations[version]!);
    if (from === this.latest) return;
    // A store's own migrations may create `meta` with their column types first.
    sql.exec("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)");
    // Bound as text: SQLite stores a JS number as REAL ("1.0" in a TEXT column).
    sql.exec(
      "INSERT INTO meta (key, value) VALUES ('schema_version', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
      String(this.latest),
    );
  }

  /** The stored version (0: never written), refusing one this code cannot read. Reads only. */
  private stored(): number {
    const sql = this.storage.sql;
    const row = hasTable(sql, "meta")
      ? sql.exec<{ value: string | number }>("SELECT value FROM meta WHERE key = 'schema_version'").toArray()[0]
      : undefined;
    const version = row === undefined ? (this.schema.legacyVersion?.(sql) ?? 0) : Number(row.value);
    if (!Number.isSafeInteger(version) || version < 0) {
      throw new ShiftlockError("internal", `${this.schema.name} schema version is unreadable`);
    }
    if (version > this.latest) {
      // Written by a newer deployment: refuse rather than misread it.
      throw new ShiftlockError(
        "internal",
        `${this.schema.name} schema ${version} is newer than this code (${this.latest})`,
      );
    }
    return version;
  }
}

/** The base of every store: its storage, its schema and the start-up that opens it. */
export abstract class MigratedStore {
  protected readonly schema: SchemaMigrations;

  constructor(
    protected readonly storage: DurableObjectStorage,
    schema: StoreSchema,
  ) {
    this.schema = new SchemaMigrations(storage, schema);
  }

  /**
   * Create or upgrade the schema (a lazy store without data stays empty), refusing a newer
   * one. Call under `blockConcurrencyWhile`, before the object serves anything.
   */
  open(): void {
    this.schema.open();
  }

  /** One write transaction (see {@link SchemaMigrations.write}). */
  protected write<T>(fn: () => T): T {
    return this.schema.write(fn);
  }

  protected get sql(): SqlStorage {
    return this.storage.sql;
  }
}
