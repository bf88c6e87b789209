/**
 * Postgres through a driver (`pg`, or any client with `query(text, values)`): the fence
 * guard and your writes in one transaction.
 *
 * Guarantees: `postgresFenced(client, key, token, write)` runs `BEGIN`, the guard
 * (sql-fence-statements.ts), `await write(client)` and `COMMIT` on the one connection it is
 * given. The guard's upsert locks the fence row until the transaction ends, so concurrent
 * writers of one fence key serialize there and each compares against the last committed
 * token (READ COMMITTED suffices). A lower token fails the CHECK: the transaction is rolled
 * back before `write` runs and `FenceRejected` is thrown. If `write` throws, everything —
 * fence update included — is rolled back and the error rethrown.
 *
 * Does not: take a connection from a pool for you (a transaction needs one connection:
 * `const client = await pool.connect()`, then `client.release()`), nor retry.
 *
 * @example
 * await ensurePostgresFence(client);
 * await postgresFenced(client, fence.key, fence.token, (c) =>
 *   c.query("INSERT INTO ledger (entry) VALUES ($1)", [entry]));
 */
import { checkToken } from "./fence-rejected.ts";
import { type FenceToken, padToken, parseStoredToken, toTokenValue } from "./fence-token.ts";
import {
  POSTGRES_FENCE_GUARD,
  POSTGRES_FENCE_READ,
  POSTGRES_FENCE_TABLE,
  isFenceViolation,
} from "./sql-fence-statements.ts";

/** One Postgres connection, as the fence needs it (a `pg` `Client` or `PoolClient` has it). */
export interface PostgresQueryable {
  query(text: string, values?: unknown[]): Promise<{ rows: unknown[] }>;
}

/** Create the fence table if it does not exist (idempotent). */
export async function ensurePostgresFence(client: PostgresQueryable): Promise<void> {
  await client.query(POSTGRES_FENCE_TABLE);
}

/** The highest token accepted for `key`, or undefined before any. */
export async function postgresFenceAccepted(client: PostgresQueryable, key: string): Promise<bigint | undefined> {
  const { rows } = await client.query(POSTGRES_FENCE_READ, [key]);
  return parseStoredToken((rows[0] as { token?: unknown } | undefined)?.token);
}

/** Run `write` in one transaction behind the fence guard; returns what `write` resolves to. */
export async function postgresFenced<C extends PostgresQueryable, T>(
  client: C,
  key: string,
  token: FenceToken,
  write: (client: C) => Promise<T>,
): Promise<T> {
  const presented = toTokenValue(token);
  await client.query("BEGIN");
  try {
    await client.query(POSTGRES_FENCE_GUARD, [key, padToken(presented)]);
    const result = await write(client);
    await client.query("COMMIT");
    return result;
  } catch (err) {
    await client.query("ROLLBACK");
    if (isFenceViolation(err)) checkToken(key, presented, (await postgresFenceAccepted(client, key)) ?? presented + 1n);
    throw err;
  }
}
