/**
 * The fence table and the guard statement for SQL databases: SQLite (Cloudflare D1, a
 * Durable Object, sql.js, better-sqlite3 …) and Postgres.
 *
 * Guarantees: one row per fence key holds the accepted token and the one before it, both
 * as 20-digit text (text order = numeric order; Postgres compares them in the "C"
 * collation). The guard statement is an upsert that sets `prev` to the stored token and
 * `token` to the presented one; the CHECK constraint `shiftlock_fence_monotonic`
 * (`token >= prev`) makes it fail — and with it the transaction or D1 batch it is part of —
 * when the presented token is lower. An equal token passes; a higher one becomes the fence.
 *
 * Does not: run anything. Create the table once (a migration), then put the guard first in
 * the transaction or batch whose statements it protects; the helpers beside this module do
 * both for D1, SQLite and Postgres.
 */

/** Name of the CHECK constraint whose violation means "lower token". */
export const FENCE_CONSTRAINT = "shiftlock_fence_monotonic";

/** SQLite / D1: the fence table. */
export const SQLITE_FENCE_TABLE = `CREATE TABLE IF NOT EXISTS shiftlock_fences (
  key TEXT PRIMARY KEY,
  token TEXT NOT NULL,
  prev TEXT NOT NULL,
  CONSTRAINT ${FENCE_CONSTRAINT} CHECK (token >= prev)
)`;

/** SQLite / D1: the guard; binds `?1` = fence key, `?2` = token padded to 20 digits. */
export const SQLITE_FENCE_GUARD =
  "INSERT INTO shiftlock_fences (key, token, prev) VALUES (?1, ?2, ?2) " +
  "ON CONFLICT (key) DO UPDATE SET prev = shiftlock_fences.token, token = excluded.token";

/** SQLite / D1: the accepted token of `?1`. */
export const SQLITE_FENCE_READ = "SELECT token FROM shiftlock_fences WHERE key = ?1";

/** Postgres: the fence table. */
export const POSTGRES_FENCE_TABLE = `CREATE TABLE IF NOT EXISTS shiftlock_fences (
  key text PRIMARY KEY,
  token text COLLATE "C" NOT NULL,
  prev text COLLATE "C" NOT NULL,
  CONSTRAINT ${FENCE_CONSTRAINT} CHECK (token >= prev)
)`;

/** Postgres: the guard; binds `$1` = fence key, `$2` = token padded to 20 digits. */
export const POSTGRES_FENCE_GUARD =
  "INSERT INTO shiftlock_fences (key, token, prev) VALUES ($1, $2, $2) " +
  "ON CONFLICT (key) DO UPDATE SET prev = shiftlock_fences.token, token = EXCLUDED.token";

/** Postgres: the accepted token of `$1`. */
export const POSTGRES_FENCE_READ = "SELECT token FROM shiftlock_fences WHERE key = $1";

/** True when `err` is the guard's CHECK failing (the driver's message names the constraint). */
export function isFenceViolation(err: unknown): boolean {
  if (typeof err !== "object" || err === null) return false;
  const { message, constraint, cause } = err as { message?: unknown; constraint?: unknown; cause?: unknown };
  if (constraint === FENCE_CONSTRAINT) return true;
  if (typeof message === "string" && message.includes(FENCE_CONSTRAINT)) return true;
  return cause !== undefined && cause !== err && isFenceViolation(cause);
}
