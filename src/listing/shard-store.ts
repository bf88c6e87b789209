/**
 * A listing shard's SQLite storage: the entries it accepted and has not yet forwarded to
 * the namespace index.
 *
 * Guarantees:
 * - One row per object at most: a newer delivery of the same object replaces the pending
 *   one (`seq` only grows), so a busy object costs the index one row per forward, not one per
 *   commit.
 * - {@link ShardStore.forwarded} deletes only what was sent: an entry replaced while its
 *   forward was in flight stays pending (its `seq` no longer matches).
 * - The shard's namespace is kept in `meta` ({@link ShardStore.rememberNamespace}), so an
 *   instance the runtime starts without a name (its alarm after a restart) forwards to the
 *   right index.
 *
 * Does not: keep anything once forwarded (the shard is a queue, not a copy of the listing),
 * or keep counters: they are statistics, held in the shard's memory like the objects' own
 * (index-shard.ts). `pending_counters` stays in the schema for the counters an earlier
 * version left there, which {@link ShardStore.takeLegacyCounters} hands over once.
 */
import { MigratedStore, type StoreSchema } from "../durable/migrations.ts";
import type { CounterDeltas, SequencedEntry } from "../core/listing-entry.ts";

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

  /** Accept one delivered entry: kept if newer than the pending one. */
  accept(entry: SequencedEntry): void {
    this.write(() => {
      this.sql.exec(
        `INSERT INTO pending (kind, key, seq, entry) VALUES (?, ?, ?, ?)
         ON CONFLICT (kind, key) DO UPDATE SET seq = excluded.seq, entry = excluded.entry
         WHERE pending.seq < excluded.seq`,
        entry.value.kind,
        entry.value.key,
        entry.seq,
        JSON.stringify(entry.value),
      );
    });
  }

  /** Up to `limit` pending entries. */
  take(limit: number): SequencedEntry[] {
    return this.sql
      .exec<{ seq: number; entry: string }>("SELECT seq, entry FROM pending LIMIT ?", limit)
      .toArray()
      .map((r) => ({ seq: r.seq, value: JSON.parse(r.entry) as SequencedEntry["value"] }));
  }

  /** Drop what a successful forward carried (see the module doc). */
  forwarded(sent: readonly SequencedEntry[]): void {
    if (sent.length === 0) return;
    this.write(() => {
      for (const e of sent) {
        this.sql.exec("DELETE FROM pending WHERE kind = ? AND key = ? AND seq = ?", e.value.kind, e.value.key, e.seq);
      }
    });
  }

  /** The namespace {@link rememberNamespace} stored, if any. */
  namespace(): string | undefined {
    return this.sql.exec<{ value: string }>("SELECT value FROM meta WHERE key = 'namespace'").toArray()[0]?.value;
  }

  /** Store the shard's namespace (one row, written once per shard). */
  rememberNamespace(namespace: string): void {
    this.write(() => {
      this.sql.exec(
        "INSERT INTO meta (key, value) VALUES ('namespace', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        namespace,
      );
    });
  }

  /** Counters an earlier version persisted, removed from storage (call once, at start-up). */
  takeLegacyCounters(): CounterDeltas {
    const counters: CounterDeltas = {};
    const rows = this.sql.exec<{ name: string; n: number }>("SELECT name, n FROM pending_counters").toArray();
    if (rows.length === 0) return counters;
    for (const r of rows) counters[r.name as keyof CounterDeltas] = r.n;
    this.write(() => this.sql.exec("DELETE FROM pending_counters"));
    return counters;
  }
}
