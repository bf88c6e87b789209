/**
 * A listing shard's SQLite storage: the entries and counters it accepted and has not yet
 * forwarded to the namespace index.
 *
 * Guarantees:
 * - One row per object at most: a newer delivery of the same object replaces the pending
 *   one (`seq` only grows), so a busy object costs the index one row per forward, not one per
 *   commit.
 * - {@link ShardStore.forwarded} deletes only what was sent: an entry replaced while its
 *   forward was in flight stays pending (its `seq` no longer matches), and counters are
 *   decremented by what was sent, never zeroed.
 *
 * Does not: keep anything once forwarded. The shard is a queue, not a copy of the listing.
 */
import { MigratedStore, type StoreSchema } from "../durable/migrations.ts";
import type { CounterDeltas, IndexDelivery, SequencedEntry } from "../core/listing-entry.ts";

const SHARD_SCHEMA: StoreSchema = {
  name: "listing shard",
  lazy: false,
  migrations: [
    `CREATE TABLE pending (
       kind TEXT NOT NULL,
       key TEXT NOT NULL,
       seq INTEGER NOT NULL,
       entry TEXT NOT NULL,
       PRIMARY KEY (kind, key)
     ) WITHOUT ROWID;
     CREATE TABLE pending_counters (name TEXT PRIMARY KEY, n INTEGER NOT NULL) WITHOUT ROWID;`,
  ],
};

export class ShardStore extends MigratedStore {
  constructor(storage: DurableObjectStorage) {
    super(storage, SHARD_SCHEMA);
  }

  /** Accept one delivery: keep its entry if newer than the pending one, add its counters. */
  accept(delivery: IndexDelivery): void {
    this.write(() => {
      const entry = delivery.entry;
      if (entry !== undefined) {
        this.sql.exec(
          `INSERT INTO pending (kind, key, seq, entry) VALUES (?, ?, ?, ?)
           ON CONFLICT (kind, key) DO UPDATE SET seq = excluded.seq, entry = excluded.entry
           WHERE pending.seq < excluded.seq`,
          entry.value.kind,
          entry.value.key,
          entry.seq,
          JSON.stringify(entry.value),
        );
      }
      for (const [name, n] of Object.entries(delivery.counters)) {
        if (n === undefined || n <= 0) continue;
        this.sql.exec(
          `INSERT INTO pending_counters (name, n) VALUES (?, ?)
           ON CONFLICT (name) DO UPDATE SET n = n + excluded.n`,
          name,
          n,
        );
      }
    });
  }

  /** Up to `limit` pending entries and every pending counter. */
  take(limit: number): { entries: SequencedEntry[]; counters: CounterDeltas } {
    const entries = this.sql
      .exec<{ seq: number; entry: string }>("SELECT seq, entry FROM pending LIMIT ?", limit)
      .toArray()
      .map((r) => ({ seq: r.seq, value: JSON.parse(r.entry) as SequencedEntry["value"] }));
    const counters: CounterDeltas = {};
    for (const r of this.sql.exec<{ name: string; n: number }>("SELECT name, n FROM pending_counters").toArray()) {
      counters[r.name as keyof CounterDeltas] = r.n;
    }
    return { entries, counters };
  }

  /** Drop what a successful forward carried (see the module doc). */
  forwarded(sent: { entries: readonly SequencedEntry[]; counters: CounterDeltas }): void {
    this.write(() => {
      for (const e of sent.entries) {
        this.sql.exec("DELETE FROM pending WHERE kind = ? AND key = ? AND seq = ?", e.value.kind, e.value.key, e.seq);
      }
      for (const [name, n] of Object.entries(sent.counters)) {
        this.sql.exec("UPDATE pending_counters SET n = n - ? WHERE name = ?", n ?? 0, name);
      }
      this.sql.exec("DELETE FROM pending_counters WHERE n <= 0");
    });
  }

  /** True when nothing waits to be forwarded. */
  empty(): boolean {
    const entries = this.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM (SELECT 1 FROM pending LIMIT 1)").one().n;
    const counters = this.sql
      .exec<{ n: number }>("SELECT COUNT(*) AS n FROM (SELECT 1 FROM pending_counters LIMIT 1)")
      .one().n;
    return entries === 0 && counters === 0;
  }
}
