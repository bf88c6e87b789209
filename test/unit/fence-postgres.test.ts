// postgresFenced on a real Postgres (Debian's `postgresql`, started by the test on loopback):
// the guard and the caller's writes in one transaction, concurrent writers serialized by the
// fence row's lock.
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  FenceRejected,
  ensurePostgresFence,
  postgresFenceAccepted,
  postgresFenced,
} from "../../src/client/fence/index.ts";
import { postgresExample } from "../fence/doc-examples.ts";
import { type PostgresServer, startPostgres } from "../fence/postgres-server.ts";

let server: PostgresServer;
let admin: pg.Client;

beforeAll(async () => {
  server = await startPostgres();
  admin = new pg.Client(server.url);
  await admin.connect();
  await ensurePostgresFence(admin);
  await ensurePostgresFence(admin);
  await admin.query("CREATE TABLE ledger (seq bigserial PRIMARY KEY, key text, token numeric(20), entry text)");
}, 60_000);

afterAll(async () => {
  await admin?.end();
  server?.stop();
}, 30_000);

async function append(client: pg.ClientBase, key: string, token: bigint, entry: string): Promise<void> {
  await postgresFenced(client, key, token, (c) =>
    c.query("INSERT INTO ledger (key, token, entry) VALUES ($1, $2, $3)", [key, token.toString(), entry]),
  );
}

async function ledger(key: string): Promise<{ token: string; entry: string }[]> {
  const { rows } = await admin.query<{ token: string; entry: string }>(
    "SELECT token::text AS token, entry FROM ledger WHERE key = $1 ORDER BY seq",
    [key],
  );
  return rows;
}

describe("postgresFenced (Postgres)", () => {
  it("accepts equal and higher tokens; a lower one is refused and writes nothing", async () => {
    await append(admin, "k1", 5n, "a");
    await append(admin, "k1", 5n, "b");
    const refused = await append(admin, "k1", 4n, "stale").catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(FenceRejected);
    expect(refused).toMatchObject({ key: "k1", presented: 4n, accepted: 5n });
    await append(admin, "k1", (1n << 64n) - 1n, "max");
    await expect(append(admin, "k1", 10n, "ten")).rejects.toThrow(FenceRejected);
    expect((await ledger("k1")).map((r) => r.entry)).toEqual(["a", "b", "max"]);
  });

  it("rolls back the fence update when the write fails", async () => {
    await append(admin, "k2", 1n, "a");
    await expect(
      postgresFenced(admin, "k2", 3n, (c) => c.query("INSERT INTO no_such_table VALUES (1)")),
    ).rejects.toThrow(/no_such_table/);
    expect(await postgresFenceAccepted(admin, "k2")).toBe(1n);
  });

  it("with 8 connections writing shuffled tokens at once, accepted tokens never go down", async () => {
    const clients = await Promise.all(
      Array.from({ length: 8 }, async () => {
        const client = new pg.Client(server.url);
        await client.connect();
        return client;
      }),
    );
    try {
      const tokens = Array.from({ length: 80 }, (_, i) => BigInt((i * 29) % 83));
      let next = 0;
      let refused = 0;
      await Promise.all(
        clients.map(async (client) => {
          while (next < tokens.length) {
            const token = tokens[next++]!;
            try {
              await append(client, "k3", token, `t${token}`);
            } catch (err) {
              expect(err).toBeInstanceOf(FenceRejected);
              refused++;
            }
          }
        }),
      );
      const written = (await ledger("k3")).map((r) => BigInt(r.token));
      expect(written.length + refused).toBe(tokens.length);
      expect(written).toEqual([...written].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)));
    } finally {
      await Promise.all(clients.map((c) => c.end()));
    }
  });

  it("docs/fencing.md's Postgres example writes under the fence and refuses a lower token", async () => {
    const pool = new pg.Pool({ connectionString: server.url, max: 2 });
    try {
      const lease = { fence: { key: "prod/claims/doc", token: 8n } };
      // The example writes to `ledger`, whose rows here carry key and token too (nullable).
      await postgresExample(pool, lease, "doc entry");
      await expect(postgresExample(pool, { fence: { key: "prod/claims/doc", token: 7n } }, "stale")).rejects.toThrow(
        FenceRejected,
      );
      expect(await ledgerEntries(null)).toEqual(["doc entry"]);
    } finally {
      await pool.end();
    }
  });
});

async function ledgerEntries(key: string | null): Promise<string[]> {
  const { rows } = await admin.query<{ entry: string }>(
    "SELECT entry FROM ledger WHERE key IS NOT DISTINCT FROM $1 ORDER BY seq",
    [key],
  );
  return rows.map((r) => r.entry);
}
