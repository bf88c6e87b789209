/**
 * `Fence`: fencing inside a Durable Object of your own, on its SQLite storage.
 *
 * Guarantees: `guard(key, token, write)` runs the comparison, the fence update and
 * `write` in one `transactionSync`: a lower token throws {@link FenceRejected} before
 * `write` runs; a `write` that throws rolls back its writes and the fence update alike; an
 * equal token is accepted, a higher one is accepted and becomes the fence. The fence lives
 * in the table `shiftlock_fences` (created on first use; tokens as 20-digit text) and is
 * never deleted by this module.
 *
 * Does not: cover writes made outside `write` or outside this object's storage, nor
 * asynchronous work (`transactionSync` takes a synchronous function: do the I/O before,
 * write inside). Needs a SQLite-backed object (`new_sqlite_classes`).
 *
 * @example
 * export class Ledger extends DurableObject {
 *   fence = new Fence(this.ctx.storage);
 *   append(fenceKey: string, token: string, entry: string) {
 *     this.fence.guard(fenceKey, token, () => {
 *       this.ctx.storage.sql.exec("INSERT INTO ledger (entry) VALUES (?)", entry);
 *     });
 *   }
 * }
 */
import { checkToken } from "./fence-rejected.ts";
import { type FenceToken, padToken, parseStoredToken, toTokenValue } from "./fence-token.ts";

/** What `Fence` needs of `ctx.storage` (a SQLite-backed `DurableObjectStorage` has it). */
export interface FenceStorage {
  readonly sql: { exec(query: string, ...bindings: string[]): { toArray(): Record<string, unknown>[] } };
  transactionSync<T>(closure: () => T): T;
}

const SCHEMA = "CREATE TABLE IF NOT EXISTS shiftlock_fences (key TEXT PRIMARY KEY, token TEXT NOT NULL)";

export class Fence {
  readonly #storage: FenceStorage;
  #ready = false;

  constructor(storage: FenceStorage) {
    this.#storage = storage;
  }

  /** The highest token accepted for `key`, or undefined before any. */
  accepted(key: string): bigint | undefined {
    this.#ensureTable();
    const row = this.#storage.sql.exec("SELECT token FROM shiftlock_fences WHERE key = ?", key).toArray()[0];
    return row === undefined ? undefined : parseStoredToken(row["token"]);
  }

  /**
   * Compare, raise the fence and run `write`, in one synchronous transaction; returns what
   * `write` returns. Throws `FenceRejected` (nothing written) on a lower token.
   */
  guard<T>(key: string, token: FenceToken, write: () => T): T {
    const presented = toTokenValue(token);
    this.#ensureTable();
    return this.#storage.transactionSync(() => {
      checkToken(key, presented, this.accepted(key));
      this.#storage.sql.exec(
        "INSERT INTO shiftlock_fences (key, token) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET token = excluded.token WHERE excluded.token > shiftlock_fences.token",
        key,
        padToken(presented),
      );
      return write();
    });
  }

  #ensureTable(): void {
    if (this.#ready) return;
    this.#storage.sql.exec(SCHEMA);
    this.#ready = true;
  }
}
