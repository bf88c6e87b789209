/**
 * The fenced stores the fence torture writes to, each through shiftlock/fence: a Durable
 * Object, D1 and R2 in Miniflare (the test Worker of test/fence-worker/, bundled by esbuild),
 * SQLite (sql.js), a real Postgres (started here, on loopback) and a MemoryFence.
 *
 * Guarantees: `write` resolves "accepted" or "refused" exactly as the fence answered, and
 * rejects when the outcome is unknown (transport error). `close()` stops what was started.
 */
import { build } from "esbuild";
import { Miniflare } from "miniflare";
import pg from "pg";
import {
  FenceRejected,
  MemoryFence,
  ensurePostgresFence,
  ensureSqliteFence,
  postgresFenced,
  sqliteFenced,
} from "../../../src/client/fence/index.ts";
import { type PostgresServer, startPostgres } from "../../fence/postgres-server.ts";
import { openSqlJs, sqlJsExecutor } from "../../fence/sql-js.ts";

export const RESOURCES = ["do", "d1", "r2", "sqlite", "postgres", "memory"] as const;
export type Resource = (typeof RESOURCES)[number];

export interface FenceStores {
  write(resource: Resource, key: string, object: string, token: bigint, entry: string): Promise<"accepted" | "refused">;
  close(): Promise<void>;
}

async function refusedAsValue(write: () => unknown): Promise<"accepted" | "refused"> {
  try {
    await write();
    return "accepted";
  } catch (err) {
    if (err instanceof FenceRejected) return "refused";
    throw err;
  }
}

export async function openStores(): Promise<FenceStores> {
  const bundle = await build({
    entryPoints: ["test/fence-worker/worker.ts"],
    bundle: true,
    format: "esm",
    platform: "neutral",
    external: ["cloudflare:*"],
    write: false,
    logLevel: "silent",
  });
  const mf = new Miniflare({
    modules: [{ type: "ESModule", path: "worker.mjs", contents: bundle.outputFiles[0]!.text }],
    compatibilityDate: "2026-04-26",
    durableObjects: { LEDGER: { className: "FencedLedger", useSQLite: true } },
    d1Databases: { DB: "fence-torture" },
    r2Buckets: ["BUCKET"],
  });
  await mf.ready;

  const sqlite = await openSqlJs();
  const exec = sqlJsExecutor(sqlite);
  ensureSqliteFence(exec);
  sqlite.run("CREATE TABLE ledger (token TEXT, entry TEXT)");

  let postgres: PostgresServer | undefined;
  let pool: pg.Pool | undefined;
  try {
    postgres = await startPostgres();
    pool = new pg.Pool({ connectionString: postgres.url, max: 8 });
    await ensurePostgresFence(pool);
    await pool.query("CREATE TABLE ledger (token numeric(20), entry text)");
  } catch (err) {
    await mf.dispose();
    await pool?.end();
    postgres?.stop();
    throw err;
  }
  const pgPool = pool;
  const memory = new MemoryFence();

  return {
    async write(resource, key, object, token, entry) {
      switch (resource) {
        case "do":
        case "d1":
        case "r2": {
          const res = await mf.dispatchFetch(`http://fence.test/${resource}/append`, {
            method: "POST",
            body: JSON.stringify({ key, token: token.toString(), entry, object: `${key}#${object}` }),
          });
          const text = await res.text();
          if (res.status === 200) return "accepted";
          if (res.status === 409) return "refused";
          throw new Error(`${resource}: ${res.status} ${text}`);
        }
        case "sqlite":
          return refusedAsValue(() =>
            sqliteFenced(exec, key, token, () =>
              sqlite.run("INSERT INTO ledger VALUES (?, ?)", [token.toString(), entry]),
            ),
          );
        case "postgres":
          return refusedAsValue(async () => {
            const client = await pgPool.connect();
            try {
              await postgresFenced(client, key, token, (c) =>
                c.query("INSERT INTO ledger VALUES ($1, $2)", [token.toString(), entry]),
              );
            } finally {
              client.release();
            }
          });
        case "memory":
          return refusedAsValue(() => memory.guard(key, token, () => entry));
      }
    },
    async close() {
      try {
        await mf.dispose();
        await pgPool.end();
      } finally {
        postgres?.stop();
      }
    },
  };
}
