/**
 * `MemoryFence`: a fence held in this process's memory, for tests, single-process
 * resources and demos.
 *
 * Guarantees: per fence key, the accepted token never decreases; `guard` compares, raises
 * the fence and runs the caller's write with nothing in between (JavaScript runs it
 * synchronously), so a lower token throws {@link FenceRejected} and the write does not run.
 * A write that throws leaves the fence where it was.
 *
 * Does not: persist anything. A resource that outlives the process keeps its fence next
 * to its data ({@link Fence} for a Durable Object, the SQL and R2 fences elsewhere).
 *
 * @example
 * const fence = new MemoryFence();
 * fence.guard(lease.fence.key, lease.fence.token, () => ledger.push(entry));
 */
import { FenceRejected, checkToken } from "./fence-rejected.ts";
import { type FenceToken, toTokenValue } from "./fence-token.ts";

export class MemoryFence {
  readonly #accepted = new Map<string, bigint>();

  /** The highest token accepted for `key`, or undefined before any. */
  accepted(key: string): bigint | undefined {
    return this.#accepted.get(key);
  }

  /**
   * Run `write` under the fence: throws `FenceRejected` (and runs nothing) when `token` is
   * lower than the one accepted for `key`; otherwise `token` becomes the fence if `write`
   * returns, and `write`'s result is returned.
   */
  guard<T>(key: string, token: FenceToken, write: () => T): T {
    const presented = toTokenValue(token);
    checkToken(key, presented, this.#accepted.get(key));
    const result = write();
    const now = this.#accepted.get(key);
    if (now === undefined || presented > now) this.#accepted.set(key, presented);
    return result;
  }

  /** Accept `token` for `key` with no write (true), or refuse it (false) — the bare check. */
  accept(key: string, token: FenceToken): boolean {
    try {
      this.guard(key, token, () => undefined);
      return true;
    } catch (err) {
      if (err instanceof FenceRejected) return false;
      throw err;
    }
  }
}
