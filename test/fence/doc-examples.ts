/**
 * The Node examples of docs/fencing.md, as code: each `// example:start NAME` …
 * `// example:end` region is the doc's block of that name, verbatim (fence-docs.test.ts
 * compares them), and the functions are run by the fence tests.
 */
import { Hono } from "hono";
import type pg from "pg";
import type { Database } from "sql.js";
import {
  FenceRejected,
  MemoryFence,
  type FenceVariables,
  ensurePostgresFence,
  ensureSqliteFence,
  fenceMiddleware,
  postgresFenced,
  sqliteFenced,
} from "../../src/client/fence/index.ts";

/** A lease as the examples use it: only its fence. */
interface HasFence {
  fence: { key: string; token: bigint };
}

export function memoryExample(lease: HasFence, staleLease: HasFence): string[] {
  // example:start memory
  const fence = new MemoryFence();
  const ledger: string[] = [];
  fence.guard(lease.fence.key, lease.fence.token, () => ledger.push("written by the owner"));
  try {
    fence.guard(staleLease.fence.key, staleLease.fence.token, () => ledger.push("never written"));
  } catch (err) {
    if (!(err instanceof FenceRejected)) throw err;
    console.warn(`refused: ${err.key} presented ${err.presented}, accepted ${err.accepted}`);
  }
  // example:end
  return ledger;
}

export function sqliteExample(db: Database, lease: HasFence, entry: string): void {
  // example:start sqlite
  // sql.js here; any synchronous driver fits in two functions.
  const exec = {
    run: (sql: string, params: string[]) => void db.run(sql, params),
    value: (sql: string, params: string[]) => db.exec(sql, params)[0]?.values[0]?.[0],
  };
  ensureSqliteFence(exec); // once: CREATE TABLE IF NOT EXISTS shiftlock_fences …
  sqliteFenced(exec, lease.fence.key, lease.fence.token, () => {
    db.run("INSERT INTO ledger (entry) VALUES (?)", [entry]);
  });
  // example:end
}

export async function postgresExample(pool: pg.Pool, lease: HasFence, entry: string): Promise<void> {
  // example:start postgres
  const client = await pool.connect(); // one connection per transaction
  try {
    await ensurePostgresFence(client); // once: CREATE TABLE IF NOT EXISTS shiftlock_fences …
    await postgresFenced(client, lease.fence.key, lease.fence.token, (c) =>
      c.query("INSERT INTO ledger (entry) VALUES ($1)", [entry]),
    );
  } finally {
    client.release();
  }
  // example:end
}

export function honoExample(fence: MemoryFence, ledger: string[]): Hono<FenceVariables> {
  // example:start hono
  const app = new Hono<FenceVariables>();
  app.post("/ledger", fenceMiddleware({ accepted: (key) => fence.accepted(key) }), async (c) => {
    const { key, token } = c.get("fence");
    const entry = await c.req.text();
    fence.guard(key, token, () => ledger.push(entry)); // the write itself is fenced
    return c.body(null, 204);
  });
  // A caller sends its lease's header: fetch(url, { headers: { "Shiftlock-Fence": lease.fence.header } })
  // example:end
  return app;
}
