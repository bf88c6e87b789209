/**
 * D1: a guarded batch — the fence guard and your statements in one `batch`, which D1 runs
 * as one transaction.
 *
 * Guarantees: `fencedBatch(db, key, token, statements)` sends `[guard, ...statements]` as
 * one batch. On a lower token the guard fails its CHECK first, D1 aborts the batch and
 * rolls it back: none of your statements runs, and `FenceRejected` is thrown. Otherwise
 * every statement ran, the token is the fence (when higher), and the statements' results
 * are returned (the guard's own result left out). Any other failure rolls back the whole
 * batch, fence update included, and is rethrown as it came.
 *
 * Does not: create the table on every call — call {@link ensureD1Fence} once (or put
 * `SQLITE_FENCE_TABLE` in a migration). Does not fence writes made outside the batch.
 *
 * @example
 * await ensureD1Fence(env.DB);
 * await fencedBatch(env.DB, fence.key, fence.token, [
 *   env.DB.prepare("INSERT INTO ledger (entry) VALUES (?)").bind(entry),
 * ]);
 */
import { checkToken } from "./fence-rejected.ts";
import { type FenceToken, padToken, parseStoredToken, toTokenValue } from "./fence-token.ts";
import { SQLITE_FENCE_GUARD, SQLITE_FENCE_READ, SQLITE_FENCE_TABLE, isFenceViolation } from "./sql-fence-statements.ts";

/** What the fence needs of a statement (a `D1PreparedStatement` has it). */
export interface D1StatementLike {
  bind(...values: unknown[]): D1StatementLike;
  first(): Promise<unknown>;
}

/** What the fence needs of a database (a `D1Database` has it). */
export interface D1DatabaseLike<S extends D1StatementLike = D1StatementLike, R = unknown> {
  prepare(query: string): S;
  batch(statements: S[]): Promise<R[]>;
  exec(query: string): Promise<unknown>;
}

/** Create the fence table if it does not exist (idempotent). */
export async function ensureD1Fence(db: Pick<D1DatabaseLike, "exec">): Promise<void> {
  // D1's exec takes one statement per line.
  await db.exec(SQLITE_FENCE_TABLE.replace(/\s*\n\s*/g, " "));
}

/** The highest token accepted for `key`, or undefined before any. */
export async function d1FenceAccepted(db: D1DatabaseLike, key: string): Promise<bigint | undefined> {
  const row = (await db.prepare(SQLITE_FENCE_READ).bind(key).first()) as { token?: unknown } | null;
  return row === null ? undefined : parseStoredToken(row.token);
}

/**
 * Run `statements` in one batch behind the fence guard; throws `FenceRejected` (nothing
 * written) on a lower token. Returns the statements' results.
 */
export async function fencedBatch<S extends D1StatementLike, R>(
  db: D1DatabaseLike<S, R>,
  key: string,
  token: FenceToken,
  statements: readonly S[],
): Promise<R[]> {
  const presented = toTokenValue(token);
  const guard = db.prepare(SQLITE_FENCE_GUARD).bind(key, padToken(presented)) as S;
  try {
    const results = await db.batch([guard, ...statements]);
    return results.slice(1);
  } catch (err) {
    if (!isFenceViolation(err)) throw err;
    const accepted = await d1FenceAccepted(db, key);
    checkToken(key, presented, accepted ?? presented + 1n);
    throw err;
  }
}
