// fencedBatch on Miniflare's D1: the guard and the caller's statements in one batch that fails
// whole on a lower token.
import { describe, expect, it } from "vitest";
import { FenceRejected, d1FenceAccepted, fencedBatch } from "../../src/client/fence/index.ts";
import { fenceEnv, uniqueKey } from "./env.ts";
import { ensureD1Ledger } from "./worker.ts";

const db = fenceEnv.DB;

async function append(key: string, token: string | bigint, entry: string): Promise<D1Result[]> {
  const insert = db.prepare("INSERT INTO ledger (key, token, entry) VALUES (?, ?, ?)").bind(key, String(token), entry);
  return fencedBatch(db, key, token, [insert, insert.bind(key, String(token), `${entry}+`)]);
}

async function entries(key: string): Promise<string[]> {
  const { results } = await db
    .prepare("SELECT entry FROM ledger WHERE key = ? ORDER BY seq")
    .bind(key)
    .all<{ entry: string }>();
  return results.map((r) => r.entry);
}

describe("fencedBatch (D1)", () => {
  it("accepts equal and higher tokens; a lower one runs none of the batch's statements", async () => {
    await ensureD1Ledger(db);
    const key = uniqueKey("d1");
    const results = await append(key, 3n, "a");
    expect(results).toHaveLength(2);
    expect(results[0]?.meta.changes).toBe(1);
    await append(key, "3", "b");
    const refused = await append(key, 2n, "stale").catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(FenceRejected);
    expect(refused).toMatchObject({ key, presented: 2n, accepted: 3n });
    await append(key, 10n, "c");
    await expect(append(key, 9n, "late")).rejects.toThrow(FenceRejected);
    expect(await entries(key)).toEqual(["a", "a+", "b", "b+", "c", "c+"]);
    expect(await d1FenceAccepted(db, key)).toBe(10n);
  });

  it("compares tokens as numbers, not text (9 < 10, up to 2^64 − 1)", async () => {
    await ensureD1Ledger(db);
    const key = uniqueKey("d1-order");
    await append(key, 10n, "ten");
    await expect(append(key, 9n, "nine")).rejects.toThrow(FenceRejected);
    await append(key, (1n << 64n) - 1n, "max");
    await expect(append(key, 99999999999999999n, "big")).rejects.toThrow(FenceRejected);
    expect(await entries(key)).toEqual(["ten", "ten+", "max", "max+"]);
  });

  it("a failing statement of the caller rolls the fence update back too", async () => {
    await ensureD1Ledger(db);
    const key = uniqueKey("d1-rollback");
    await append(key, 1n, "a");
    const bad = db.prepare("INSERT INTO no_such_table VALUES (1)");
    await expect(fencedBatch(db, key, 5n, [bad])).rejects.toThrow(/no_such_table/);
    expect(await d1FenceAccepted(db, key)).toBe(1n);
  });

  it("under concurrent batches, the ledger's tokens never go down", async () => {
    await ensureD1Ledger(db);
    const key = uniqueKey("d1-race");
    const tokens = Array.from({ length: 40 }, (_, i) => BigInt((i * 17) % 41));
    const outcomes = await Promise.allSettled(tokens.map((t) => append(key, t, `e${t}`)));
    for (const o of outcomes) if (o.status === "rejected") expect(o.reason).toBeInstanceOf(FenceRejected);
    const { results } = await db
      .prepare("SELECT token FROM ledger WHERE key = ? ORDER BY seq")
      .bind(key)
      .all<{ token: string }>();
    const written = results.map((r) => BigInt(r.token));
    expect(written.length).toBe(2 * outcomes.filter((o) => o.status === "fulfilled").length);
    expect(written).toEqual([...written].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)));
  });
});
