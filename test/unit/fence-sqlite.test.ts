// sqliteFenced on SQLite (sql.js, WebAssembly): the guard and the caller's writes in one
// transaction that is rolled back whole on a lower token.
import { beforeEach, describe, expect, it } from "vitest";
import type { Database } from "sql.js";
import {
  FenceRejected,
  ensureSqliteFence,
  sqliteFenceAccepted,
  sqliteFenced,
  type SqliteExecutor,
} from "../../src/client/fence/index.ts";
import { openSqlJs, sqlJsExecutor } from "../fence/sql-js.ts";

let db: Database;
let exec: SqliteExecutor;

beforeEach(async () => {
  db = await openSqlJs();
  exec = sqlJsExecutor(db);
  ensureSqliteFence(exec);
  ensureSqliteFence(exec);
  db.run("CREATE TABLE ledger (seq INTEGER PRIMARY KEY AUTOINCREMENT, token TEXT, entry TEXT)");
});

function append(key: string, token: bigint | string, entry: string): void {
  sqliteFenced(exec, key, token, () =>
    db.run("INSERT INTO ledger (token, entry) VALUES (?, ?)", [String(token), entry]),
  );
}

function entries(): string[] {
  return (db.exec("SELECT entry FROM ledger ORDER BY seq")[0]?.values ?? []).map((row) => String(row[0]));
}

describe("sqliteFenced (sql.js)", () => {
  it("accepts equal and higher tokens and refuses a lower one with nothing written", () => {
    append("k", 7n, "a");
    append("k", "7", "b");
    expect(() => append("k", 6n, "stale")).toThrow(FenceRejected);
    try {
      append("k", 6n, "stale");
    } catch (err) {
      expect(err).toMatchObject({ key: "k", presented: 6n, accepted: 7n });
    }
    append("k", 10n, "c");
    expect(() => append("k", 9n, "nine")).toThrow(FenceRejected);
    append("other", 1n, "other key");
    expect(entries()).toEqual(["a", "b", "c", "other key"]);
    expect(sqliteFenceAccepted(exec, "k")).toBe(10n);
  });

  it("rolls back the fence update and the writes when the write throws", () => {
    append("k", 1n, "a");
    expect(() =>
      sqliteFenced(exec, "k", 5n, () => {
        db.run("INSERT INTO ledger (token, entry) VALUES ('5', 'half')");
        throw new Error("write failed");
      }),
    ).toThrow("write failed");
    expect(sqliteFenceAccepted(exec, "k")).toBe(1n);
    expect(entries()).toEqual(["a"]);
  });

  it("orders tokens as numbers up to 2^64 − 1", () => {
    append("k", (1n << 64n) - 2n, "near max");
    expect(() => append("k", 99999999999999999n, "17 digits")).toThrow(FenceRejected);
    append("k", (1n << 64n) - 1n, "max");
    expect(entries()).toEqual(["near max", "max"]);
  });
});
