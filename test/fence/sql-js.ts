/** sql.js (SQLite in WebAssembly) for the Node fence tests, adapted to `SqliteExecutor`. */
import initSqlJs, { type Database } from "sql.js";
import type { SqliteExecutor } from "../../src/client/fence/index.ts";

/** A fresh in-memory SQLite database. */
export async function openSqlJs(): Promise<Database> {
  const SQL = await initSqlJs();
  return new SQL.Database();
}

/** The two functions the fence needs, over sql.js. */
export function sqlJsExecutor(db: Database): SqliteExecutor {
  return {
    run: (sql, params) => void db.run(sql, params),
    value: (sql, params) => db.exec(sql, params)[0]?.values[0]?.[0],
  };
}
