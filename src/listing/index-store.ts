/**
 * The namespace index's SQLite storage: one row per claim, generation and scope the
 * namespace's objects reported (through their shards), the tallies `/stats` answers from, and
 * counters in 10-second buckets for the last hour.
 *
 * Guarantees:
 * - An entry is applied only when its `seq` is above the stored one for that object: batches
 *   that arrive late, twice or out of order never move an entry back.
 * - Each list has its own table with an index per filter (and per pair of filters), so every
 *   page — with any filter — is one range scan in key order by SQLite's BINARY collation (the
 *   bytes of the UTF-8 form, docs/protocol.md): `limit + 1` rows read, however many entries
 *   the namespace holds or the filter skips.
 * - Tallies (claims per phase, generations, scopes) are kept as entries change, in the same
 *   transaction, so `/stats` reads a handful of rows, never the entries.
 * - Counter buckets older than {@link COUNTER_RETENTION_MS} are deleted as new ones arrive.
 *
 * Does not: decide anything about the records it holds; they are copies.
 */
import { MigratedStore, type StoreSchema } from "../durable/migrations.ts";
import type { CounterDeltas, IndexEntry, IndexKind, SequencedEntry } from "../core/listing-entry.ts";

/** Width of a counter bucket. */
export const COUNTER_BUCKET_MS = 10_000;
/** Counters kept (the stats route answers the last minute and the last hour). */
export const COUNTER_RETENTION_MS = 60 * 60 * 1000;

/** How each list is stored: its table, its key column and its filter columns. */
interface ListTable {
  table: string;
  key: string;
  /** Filter columns, by query name. */
  filters: Record<string, string>;
  /** The filter values of an entry, by query name. */
  values: (entry: IndexEntry) => Record<string, string>;
  /** The tally an entry counts in (claims: its phase). */
  tally: (entry: IndexEntry) => string;
}

const LISTS: Record<IndexKind, ListTable> = {
  claim: {
    table: "listed_claims",
    key: "name",
    filters: { phase: "phase", owner: "owner" },
    values: (e) => (e.kind === "claim" ? { phase: e.record.phase, owner: e.record.ownerGeneration } : {}),
    tally: (e) => (e.kind === "claim" ? e.record.phase : ""),
  },
  generation: {
    table: "listed_generations",
    key: "id",
    filters: { service: "service", state: "state" },
    values: (e) => (e.kind === "generation" ? { service: e.record.service, state: e.record.state } : {}),
    tally: () => "",
  },
  scope: {
    table: "listed_scopes",
    key: "scope_key",
    filters: { volumeId: "volume_id" },
    values: (e) => (e.kind === "scope" ? { volumeId: e.record.volumeId } : {}),
    tally: () => "",
  },
};

const INDEX_SCHEMA: StoreSchema = {
  name: "index",
  lazy: false,
  migrations: [
    `CREATE TABLE entries (
       kind TEXT NOT NULL,
       key TEXT NOT NULL,
       f1 TEXT NOT NULL,
       f2 TEXT NOT NULL,
       seq INTEGER NOT NULL,
       record TEXT NOT NULL,
       PRIMARY KEY (kind, key)
     ) WITHOUT ROWID;
     CREATE TABLE counters (
       bucket INTEGER NOT NULL,
       name TEXT NOT NULL,
       n INTEGER NOT NULL,
       PRIMARY KEY (bucket, name)
     ) WITHOUT ROWID;`,
    // 2: a table per list with an index per filter, and tallies kept as entries change.
    `CREATE TABLE listed_claims (
       name TEXT PRIMARY KEY, phase TEXT NOT NULL, owner TEXT NOT NULL, seq INTEGER NOT NULL, record TEXT NOT NULL
     ) WITHOUT ROWID;
     CREATE INDEX listed_claims_phase ON listed_claims (phase, name);
     CREATE INDEX listed_claims_owner ON listed_claims (owner, name);
     CREATE INDEX listed_claims_owner_phase ON listed_claims (owner, phase, name);
     CREATE TABLE listed_generations (
       id TEXT PRIMARY KEY, service TEXT NOT NULL, state TEXT NOT NULL, seq INTEGER NOT NULL, record TEXT NOT NULL
     ) WITHOUT ROWID;
     CREATE INDEX listed_generations_service ON listed_generations (service, id);
     CREATE INDEX listed_generations_state ON listed_generations (state, id);
     CREATE INDEX listed_generations_service_state ON listed_generations (service, state, id);
     CREATE TABLE listed_scopes (
       scope_key TEXT PRIMARY KEY, volume_id TEXT NOT NULL, seq INTEGER NOT NULL, record TEXT NOT NULL
     ) WITHOUT ROWID;
     CREATE INDEX listed_scopes_volume ON listed_scopes (volume_id, scope_key);
     CREATE TABLE tallies (kind TEXT NOT NULL, bucket TEXT NOT NULL, n INTEGER NOT NULL, PRIMARY KEY (kind, bucket))
       WITHOUT ROWID;
     INSERT INTO listed_claims SELECT key, f1, f2, seq, record FROM entries WHERE kind = 'claim';
     INSERT INTO listed_generations SELECT key, f1, f2, seq, record FROM entries WHERE kind = 'generation';
     INSERT INTO listed_scopes SELECT key, f1, seq, record FROM entries WHERE kind = 'scope';
     INSERT INTO tallies SELECT 'claim', phase, COUNT(*) FROM listed_claims GROUP BY phase;
     INSERT INTO tallies SELECT 'generation', '', COUNT(*) FROM listed_generations HAVING COUNT(*) > 0;
     INSERT INTO tallies SELECT 'scope', '', COUNT(*) FROM listed_scopes HAVING COUNT(*) > 0;
     DROP TABLE entries;`,
  ],
};

/** One page request against the store: exact-match `filters` by query name. */
export interface PageQuery {
  kind: IndexKind;
  after: string | undefined;
  prefix: string | undefined;
  filters: Record<string, string | undefined>;
  limit: number;
}

/** Above every name that starts with `prefix`: names are ≤ 256 bytes, U+10FFFF is the largest character. */
function prefixUpperBound(prefix: string): string {
  return prefix + "\u{10FFFF}".repeat(65);
}

export class IndexStore extends MigratedStore {
  constructor(storage: DurableObjectStorage) {
    super(storage, INDEX_SCHEMA);
  }

  /** Apply a shard's batch: each entry if newer than the stored one, and its counters. One transaction. */
  applyBatch(entries: readonly SequencedEntry[], counters: CounterDeltas, nowMs: number): void {
    this.write(() => {
      for (const e of entries) this.upsert(e.seq, e.value);
      this.addCounters(counters, nowMs);
    });
  }

  private upsert(seq: number, value: IndexEntry): void {
    const list = LISTS[value.kind];
    const prior = this.sql
      .exec<{ seq: number; record: string }>(`SELECT seq, record FROM ${list.table} WHERE ${list.key} = ?`, value.key)
      .toArray()[0];
    if (prior !== undefined && prior.seq >= seq) return;
    const values = list.values(value);
    const columns = Object.entries(list.filters).map(([name, column]) => ({ column, value: values[name] ?? "" }));
    const names = [list.key, ...columns.map((c) => c.column), "seq", "record"];
    this.sql.exec(
      `INSERT OR REPLACE INTO ${list.table} (${names.join(", ")}) VALUES (${names.map(() => "?").join(", ")})`,
      value.key,
      ...columns.map((c) => c.value),
      seq,
      JSON.stringify(value.record),
    );
    const before =
      prior === undefined ? undefined : list.tally({ ...value, record: JSON.parse(prior.record) as never });
    const after = list.tally(value);
    if (before === after) return;
    if (before !== undefined) this.addTally(value.kind, before, -1);
    this.addTally(value.kind, after, 1);
  }

  private addTally(kind: IndexKind, bucket: string, n: number): void {
    this.sql.exec(
      `INSERT INTO tallies (kind, bucket, n) VALUES (?, ?, ?)
       ON CONFLICT (kind, bucket) DO UPDATE SET n = n + excluded.n`,
      kind,
      bucket,
      n,
    );
  }

  private addCounters(counters: CounterDeltas, nowMs: number): void {
    const names = Object.entries(counters).filter(([, n]) => n !== undefined && n > 0);
    if (names.length === 0) return;
    const bucket = Math.floor(nowMs / COUNTER_BUCKET_MS);
    for (const [name, n] of names) {
      this.sql.exec(
        `INSERT INTO counters (bucket, name, n) VALUES (?, ?, ?)
         ON CONFLICT (bucket, name) DO UPDATE SET n = n + excluded.n`,
        bucket,
        name,
        n,
      );
    }
    this.sql.exec(
      "DELETE FROM counters WHERE bucket < ?",
      Math.floor((nowMs - COUNTER_RETENTION_MS) / COUNTER_BUCKET_MS),
    );
  }

  /**
   * One page: up to `limit` records (JSON text) after `after`, whether more follow, and the
   * rows SQLite read for it (`limit + 1` at most: the filters are index columns).
   */
  page(q: PageQuery): { keys: string[]; records: string[]; more: boolean; rowsRead: number } {
    const list = LISTS[q.kind];
    const where: string[] = [];
    const args: (string | number)[] = [];
    for (const [name, value] of Object.entries(q.filters)) {
      const column = list.filters[name];
      if (value === undefined || column === undefined) continue;
      where.push(`${column} = ?`);
      args.push(value);
    }
    if (q.after !== undefined) {
      where.push(`${list.key} > ?`);
      args.push(q.after);
    }
    if (q.prefix !== undefined && q.prefix !== "") {
      // The range alone is exact: a key within it that did not start with the prefix would
      // differ from it at some character by a larger one, and so sort above the bound.
      where.push(`${list.key} >= ?`, `${list.key} <= ?`);
      args.push(q.prefix, prefixUpperBound(q.prefix));
    }
    const cursor = this.sql.exec<{ key: string; record: string }>(
      `SELECT ${list.key} AS key, record FROM ${list.table}
       ${where.length === 0 ? "" : `WHERE ${where.join(" AND ")}`} ORDER BY ${list.key} LIMIT ?`,
      ...args,
      q.limit + 1,
    );
    const rows = cursor.toArray();
    const more = rows.length > q.limit;
    const shown = more ? rows.slice(0, q.limit) : rows;
    return { keys: shown.map((r) => r.key), records: shown.map((r) => r.record), more, rowsRead: cursor.rowsRead };
  }

  /** Counter sums since `sinceMs` (bucket granularity), by counter name. */
  counterSums(sinceMs: number): Record<string, number> {
    const rows = this.sql
      .exec<{ name: string; n: number }>(
        "SELECT name, SUM(n) AS n FROM counters WHERE bucket >= ? GROUP BY name",
        Math.floor(sinceMs / COUNTER_BUCKET_MS),
      )
      .toArray();
    return Object.fromEntries(rows.map((r) => [r.name, r.n]));
  }

  /** Entries per kind, and claims per phase: read from the tallies, not the entries. */
  tallies(): { claimsByPhase: Record<string, number>; generations: number; scopes: number } {
    const claimsByPhase: Record<string, number> = {};
    let generations = 0;
    let scopes = 0;
    for (const r of this.sql.exec<{ kind: string; bucket: string; n: number }>("SELECT kind, bucket, n FROM tallies")) {
      if (r.kind === "claim") claimsByPhase[r.bucket] = r.n;
      else if (r.kind === "generation") generations = r.n;
      else if (r.kind === "scope") scopes = r.n;
    }
    return { claimsByPhase, generations, scopes };
  }
}
