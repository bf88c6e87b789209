/**
 * The namespace index's SQLite storage: one row per claim, generation and scope the
 * namespace's objects reported, plus counters in 10-second buckets for the last hour.
 *
 * Guarantees:
 * - An entry is applied only when its `seq` is above the stored one for that object, in one
 *   statement (`INSERT … ON CONFLICT DO UPDATE … WHERE seq < excluded.seq`): deliveries that
 *   arrive late, twice or out of order never move an entry back.
 * - Pages are read in key order by SQLite's BINARY collation, i.e. by the bytes of the UTF-8
 *   form (docs/protocol.md#operating-at-scale), `limit + 1` rows at most, so a page costs what it shows.
 * - Counter buckets older than {@link COUNTER_RETENTION_MS} are deleted as new ones arrive.
 *
 * Does not: decide anything about the records it holds; they are copies.
 */
import { MigratedStore, type StoreSchema } from "../durable/migrations.ts";
import type { CounterDeltas, IndexEntry, IndexKind } from "./delivery.ts";

/** Width of a counter bucket. */
export const COUNTER_BUCKET_MS = 10_000;
/** Counters kept (the stats route answers the last minute and the last hour). */
export const COUNTER_RETENTION_MS = 60 * 60 * 1000;

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
  ],
};

/** The filter columns of an entry: claims (phase, owner), generations (service, state), scopes (volumeId, ""). */
function filterColumns(entry: IndexEntry): [string, string] {
  switch (entry.kind) {
    case "claim":
      return [entry.record.phase, entry.record.ownerGeneration];
    case "generation":
      return [entry.record.service, entry.record.state];
    case "scope":
      return [entry.record.volumeId, ""];
  }
}

/** One page request against the store. `f1`/`f2` are exact-match filters on the filter columns. */
export interface PageQuery {
  kind: IndexKind;
  after: string | undefined;
  prefix: string | undefined;
  f1: string | undefined;
  f2: string | undefined;
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

  /** Apply one object's entry if it is newer than what is stored. One transaction. */
  apply(entry: { seq: number; value: IndexEntry } | undefined, counters: CounterDeltas, nowMs: number): void {
    this.write(() => {
      if (entry !== undefined) this.upsert(entry.seq, entry.value);
      this.addCounters(counters, nowMs);
    });
  }

  /** Write many entries at once (seeding in tests, large reconciliations). */
  applyMany(entries: readonly { seq: number; value: IndexEntry }[]): void {
    this.write(() => {
      for (const e of entries) this.upsert(e.seq, e.value);
    });
  }

  private upsert(seq: number, value: IndexEntry): void {
    const [f1, f2] = filterColumns(value);
    this.sql.exec(
      `INSERT INTO entries (kind, key, f1, f2, seq, record) VALUES (?, ?, ?, ?, ?, ?)
       ON CONFLICT (kind, key) DO UPDATE SET f1 = excluded.f1, f2 = excluded.f2, seq = excluded.seq,
         record = excluded.record
       WHERE entries.seq < excluded.seq`,
      value.kind,
      value.key,
      f1,
      f2,
      seq,
      JSON.stringify(value.record),
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

  /** One page: up to `limit` records (JSON text) after `after`, and whether more follow. */
  page(q: PageQuery): { keys: string[]; records: string[]; more: boolean } {
    const where = ["kind = ?"];
    const args: (string | number)[] = [q.kind];
    if (q.after !== undefined) {
      where.push("key > ?");
      args.push(q.after);
    }
    if (q.prefix !== undefined && q.prefix !== "") {
      where.push("key >= ?", "key <= ?", "substr(key, 1, ?) = ?");
      args.push(q.prefix, prefixUpperBound(q.prefix), [...q.prefix].length, q.prefix);
    }
    if (q.f1 !== undefined) {
      where.push("f1 = ?");
      args.push(q.f1);
    }
    if (q.f2 !== undefined) {
      where.push("f2 = ?");
      args.push(q.f2);
    }
    const rows = this.sql
      .exec<{ key: string; record: string }>(
        `SELECT key, record FROM entries WHERE ${where.join(" AND ")} ORDER BY key LIMIT ?`,
        ...args,
        q.limit + 1,
      )
      .toArray();
    const more = rows.length > q.limit;
    const shown = more ? rows.slice(0, q.limit) : rows;
    return { keys: shown.map((r) => r.key), records: shown.map((r) => r.record), more };
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

  /** Entries per kind, and claims per phase. */
  tallies(): { claimsByPhase: Record<string, number>; generations: number; scopes: number } {
    const claimsByPhase: Record<string, number> = {};
    for (const r of this.sql
      .exec<{ f1: string; n: number }>("SELECT f1, COUNT(*) AS n FROM entries WHERE kind = 'claim' GROUP BY f1")
      .toArray()) {
      claimsByPhase[r.f1] = r.n;
    }
    const count = (kind: IndexKind): number =>
      this.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM entries WHERE kind = ?", kind).one().n;
    return { claimsByPhase, generations: count("generation"), scopes: count("scope") };
  }

  /** Up to `limit` entry keys of `kind` after `after` (reconciliation's round robin). */
  keysAfter(kind: IndexKind, after: string, limit: number): string[] {
    return this.sql
      .exec<{ key: string }>(
        "SELECT key FROM entries WHERE kind = ? AND key > ? ORDER BY key LIMIT ?",
        kind,
        after,
        limit,
      )
      .toArray()
      .map((r) => r.key);
  }
}
