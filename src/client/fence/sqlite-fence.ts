/**
 * SQLite through a synchronous driver (sql.js, better-sqlite3, node:sqlite, bun:sqlite):
 * the fence guard and your writes in one transaction.
 *
 * Guarantees: `sqliteFenced(db, key, token, write)` runs `BEGIN IMMEDIATE`, the guard
 * (sql-fence-statements.ts), `write()` and `COMMIT`. A lower token fails the guard's CHECK:
 * the transaction is rolled back before `write` runs and `FenceRejected` is thrown. If
 * `write` throws, the transaction — fence update included — is rolled back and the error
 * rethrown. `BEGIN IMMEDIATE` takes the write lock first, so two processes sharing the
 * file serialize on it.
 *
 * Does not: adapt your driver. Pass a {@link SqliteExecutor}: two functions, usually one
 * line each (see the example for sql.js). Must not be called inside another transaction.
 *
 * @example
 * const exec = { run: (sql, params) => db.run(sql, params), value: (sql, params) => db.exec(sql, params)[0]?.values[0]?.[0] };
 * ensureSqliteFence(exec);
 * sqliteFenced(exec, fence.key, fence.token, () => db.run("INSERT INTO ledger (entry) VALUES (?)", [entry]));
 */
import { checkToken } from "./fence-rejected.ts";
import { type FenceToken, padToken, parseStoredToken, toTokenValue } from "./fence-token.ts";
import { SQLITE_FENCE_GUARD, SQLITE_FENCE_READ, SQLITE_FENCE_TABLE, isFenceViolation } from "./sql-fence-statements.ts";

/** A synchronous SQLite connection, as the fence needs it. */
export interface SqliteExecutor {
  /** Run one statement with positional parameters (`?1`, `?2` …). */
  run(sql: string, params: string[]): void;
  /** The first column of the first row, or undefined when there is no row. */
  value(sql: string, params: string[]): unknown;
}

/** Create the fence table if it does not exist (idempotent). */
export function ensureSqliteFence(db: SqliteExecutor): void {
  db.run(SQLITE_FENCE_TABLE, []);
}

/** The highest token accepted for `key`, or undefined before any. */
export function sqliteFenceAccepted(db: SqliteExecutor, key: string): bigint | undefined {
  return parseStoredToken(db.value(SQLITE_FENCE_READ, [key]));
}

/** Run `write` in one transaction behind the fence guard; returns what `write` returns. */
export function sqliteFenced<T>(db: SqliteExecutor, key: string, token: FenceToken, write: () => T): T {
  const presented = toTokenValue(token);
  db.run("BEGIN IMMEDIATE", []);
  try {
    db.run(SQLITE_FENCE_GUARD, [key, padToken(presented)]);
    const result = write();
    db.run("COMMIT", []);
    return result;
  } catch (err) {
    db.run("ROLLBACK", []);
    if (isFenceViolation(err)) checkToken(key, presented, sqliteFenceAccepted(db, key) ?? presented + 1n);
    throw err;
  }
}
