/* eslint-disable @typescript-eslint/no-explicit-any, @typescript-eslint/no-unsafe-return, @typescript-eslint/no-unsafe-argument, @typescript-eslint/no-unsafe-call -- JSON bodies under test are inspected loosely. */
// Listing (docs/protocol.md#listing): the namespace index fed by the objects' outboxes, pages in UTF-8 byte
// order with opaque cursors, filters, cursor tampering, auth, namespace isolation, stats.
// The 10,000-claim test seeds the index object directly (creating 10,000 claim objects
// through the router takes minutes on the shared test machine); every other test feeds the
// index through real claim, generation and scope objects.
import { runInDurableObject } from "cloudflare:test";
import type { ClaimObject } from "./test-entry.ts";
import { restartObject } from "./object-helpers.ts";
import { settleListing, shardStub } from "./listing-helpers.ts";
import { env, exports } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import type { NamespaceIndex } from "./test-entry.ts";
import { testEnv } from "./test-env.ts";
import type { IndexEntry } from "../../src/core/listing-entry.ts";
import { objectName } from "../../src/durable/object-names.ts";
import { compareUtf8 } from "../../src/core/listing-cursor.ts";
import { READ, claimStub, claimUrl, get, post, unique } from "./claims-helpers.ts";

beforeAll(async () => {
  await exports.default.fetch("http://x/healthz");
}, 60_000);

const TTL_MS = 60_000;

function indexStub(ns: string): DurableObjectStub<NamespaceIndex> {
  return testEnv.INDEX.getByName(objectName(ns, "index"));
}

function listUrl(ns: string, list: string, query: Record<string, string> = {}): string {
  const qs = new URLSearchParams(query).toString();
  return `http://x/v1/ns/${encodeURIComponent(ns)}/${list}${qs === "" ? "" : `?${qs}`}`;
}

type ClaimEntry = Extract<IndexEntry, { kind: "claim" }>;

function claimEntry(name: string, phase: string, owner: string): ClaimEntry {
  return {
    kind: "claim",
    key: name,
    record: {
      name,
      ownerGeneration: owner,
      fencingToken: "1",
      phase: phase as "owned",
      acquiredAtMs: 1,
      expiresAtMs: 2,
      previousOwner: "",
      pendingSuccessor: "",
      drainStatus: "",
      transferStatus: "",
      lastHeartbeatMs: 1,
      reason: "acquired",
      version: "1",
    },
  };
}

/** Every page of a list, following cursors. */
async function allPages(ns: string, list: string, query: Record<string, string>, token = READ) {
  const items: any[] = [];
  let cursor: string | null = null;
  let pages = 0;
  do {
    const res = await get(listUrl(ns, list, cursor === null ? query : { ...query, cursor }), token);
    expect(res.status).toBe(200);
    items.push(...res.body[list]);
    cursor = res.body.cursor;
    pages++;
  } while (cursor !== null);
  return { items, pages };
}

describe("listing claims", () => {
  it("10,000 claims (index seeded directly) list completely, in UTF-8 byte order, across pages", async () => {
    const ns = unique("ns");
    const names: string[] = [];
    for (let i = 0; i < 10_000; i++) names.push(`c-${String(i).padStart(5, "0")}`);
    // Orders where UTF-16 and UTF-8 disagree: U+FF5A sorts before U+1F600 only in UTF-8.
    names.splice(0, 3, "\u{1F600}", "\uFF5A", "é");
    const entries = names.map((n, i) => claimEntry(n, i % 3 === 0 ? "owned" : "unowned", `g${i % 4}`));
    await runInDurableObject(indexStub(ns), (o: NamespaceIndex) => {
      for (let i = 0; i < entries.length; i += 1000) o.seed(entries.slice(i, i + 1000));
    });
    const expected = [...names].sort(compareUtf8);
    expect(expected.indexOf("\uFF5A")).toBeLessThan(expected.indexOf("\u{1F600}"));

    const full = await allPages(ns, "claims", { limit: "500" });
    expect(full.pages).toBe(20);
    expect(full.items.map((c) => c.name)).toEqual(expected);

    const byDefault = await get(listUrl(ns, "claims"), READ);
    expect(byDefault.body.claims).toHaveLength(100);
    expect(byDefault.body.cursor).toEqual(expect.any(String));

    const owned = await allPages(ns, "claims", { phase: "owned", limit: "500" });
    expect(owned.items).toHaveLength(entries.filter((e) => e.record.phase === "owned").length);
    expect(owned.items.every((c) => c.phase === "owned")).toBe(true);

    const ownedByG0 = await allPages(ns, "claims", { phase: "owned", owner: "g0", limit: "500" });
    expect(ownedByG0.items.map((c) => c.name)).toEqual(
      expected.filter((n) => {
        const e = entries[names.indexOf(n)]!;
        return e.record.phase === "owned" && e.record.ownerGeneration === "g0";
      }),
    );

    const prefixed = await allPages(ns, "claims", { prefix: "c-012", limit: "7" });
    expect(prefixed.items.map((c) => c.name)).toEqual(expected.filter((n) => n.startsWith("c-012")));
    expect(prefixed.pages).toBe(Math.ceil(100 / 7));
  }, 120_000);

  it("claims acquired through the router appear within 2 s, with their current record", async () => {
    const ns = unique("ns");
    for (const name of ["b", "a", "c"]) {
      const res = await post(claimUrl(ns, name, "/acquire"), { generationId: "g1", ttlMs: TTL_MS });
      expect(res.status).toBe(200);
    }
    const released = await post(claimUrl(ns, "c", "/release"), { generationId: "g1", token: "1" });
    expect(released.status).toBe(200);
    const started = Date.now();
    let listed: any[] = [];
    // Polls the guarantee itself (lag ≤ 2 s), not a stand-in for synchronisation.
    while (Date.now() - started < 2_000) {
      listed = (await get(listUrl(ns, "claims"), READ)).body.claims;
      if (listed.length === 3 && listed[2].phase === "unowned") break;
      await new Promise((r) => setTimeout(r, 25));
    }
    expect(listed.map((c) => [c.name, c.phase, c.ownerGeneration])).toEqual([
      ["a", "owned", "g1"],
      ["b", "owned", "g1"],
      ["c", "unowned", ""],
    ]);
    for (const name of ["a", "b"]) await runInDurableObject(claimStub(ns, name), (_o, s) => s.storage.deleteAlarm());
  });

  it("limit outside 1–500, a tampered cursor and a cursor of another query are 400", async () => {
    const ns = unique("ns");
    await runInDurableObject(indexStub(ns), (o: NamespaceIndex) => {
      o.seed(["a", "b", "c"].map((n) => claimEntry(n, "owned", "g")));
    });
    for (const limit of ["0", "501", "-1", "1.5", "x"]) {
      const res = await get(listUrl(ns, "claims", { limit }), READ);
      expect(res.status, limit).toBe(400);
      expect(res.body.error.code).toBe("invalid_request");
    }
    const first = await get(listUrl(ns, "claims", { limit: "1" }), READ);
    const cursor: string = first.body.cursor;
    const tampered = cursor.slice(0, -2) + (cursor.endsWith("A") ? "BB" : "AA");
    for (const bad of [tampered, "not-a-cursor", `${cursor}x`]) {
      const res = await get(listUrl(ns, "claims", { limit: "1", cursor: bad }), READ);
      expect(res.status, bad).toBe(400);
      expect(res.body.error).toMatchObject({ code: "invalid_request", field: "cursor" });
    }
    // The same cursor with other filters, or in another namespace, is not a cursor of that query.
    expect((await get(listUrl(ns, "claims", { cursor, phase: "owned" }), READ)).status).toBe(400);
    expect((await get(listUrl(unique("ns"), "claims", { cursor }), READ)).status).toBe(400);
    const second = await get(listUrl(ns, "claims", { limit: "1", cursor }), READ);
    expect(second.body.claims.map((c: any) => c.name)).toEqual(["b"]);
    const last = await get(listUrl(ns, "claims", { limit: "2", cursor }), READ);
    expect(last.body).toMatchObject({ cursor: null });
  });

  it("needs the read role for its namespace: no token 401, another namespace's token 403", async () => {
    const ns = unique("ns");
    expect((await get(listUrl(ns, "claims"), READ)).status).toBe(200);
    expect((await get(listUrl(ns, "claims"), null)).status).toBe(401);
    for (const list of ["claims", "generations", "scopes", "stats"]) {
      const res = await get(listUrl(ns, list), "test-write-alpha");
      expect(res.status, list).toBe(403);
      expect(res.body.error.code).toBe("forbidden");
    }
  });

  it("no namespace sees another's entries", async () => {
    const [ns1, ns2] = [unique("ns"), unique("ns")];
    await runInDurableObject(indexStub(ns1), (o: NamespaceIndex) => o.seed([claimEntry("only-in-1", "owned", "g")]));
    expect((await get(listUrl(ns2, "claims"), READ)).body).toEqual({ claims: [], cursor: null });
    expect((await get(listUrl(ns1, "claims"), READ)).body.claims.map((c: any) => c.name)).toEqual(["only-in-1"]);
  });
});

describe("listing generations and scopes, and stats", () => {
  it("generations and scopes created through the router are listed with their filters", async () => {
    const ns = unique("ns");
    const base = `http://x/v1/ns/${ns}`;
    for (const [id, service] of [
      ["g2", "api"],
      ["g1", "api"],
      ["g3", "web"],
    ]) {
      expect((await post(`${base}/generations`, { id, service, instanceId: "i" })).status).toBe(200);
    }
    const lease = await post(`${base}/volumes/v1/stores/s1/leases`, { participantId: "p", ttlMs: TTL_MS });
    expect(lease.status).toBe(201);
    expect((await post(`${base}/volumes/v0/keys/k/leases`, { participantId: "p", ttlMs: TTL_MS })).status).toBe(201);
    // Deliveries were started by the commits; settle them (no sleeps).
    await settleListing(
      ns,
      ["g1", "g2", "g3"].map((id) => env.GENERATIONS.getByName(objectName(ns, "generation", id))),
    );
    const api = await get(listUrl(ns, "generations", { service: "api" }), READ);
    expect(api.body.generations.map((g: any) => g.id)).toEqual(["g1", "g2"]);
    const joining = await get(listUrl(ns, "generations", { state: "joining" }), READ);
    expect(joining.body.generations).toHaveLength(3);
    const scopeStub = (...identity: string[]) => env.SCOPES.getByName(objectName(ns, "scope", ...identity));
    await settleListing(ns, [scopeStub("v1", "s1", ""), scopeStub("v0", "", "k")]);
    const scopes = await get(listUrl(ns, "scopes"), READ);
    expect(scopes.body.scopes).toEqual([
      expect.objectContaining({
        volumeId: "v0",
        objectStoreId: "",
        key: "k",
        held: true,
        holder: "p",
        generation: "0",
      }),
      expect.objectContaining({
        volumeId: "v1",
        objectStoreId: "s1",
        key: "",
        held: true,
        holder: "p",
        wantLock: false,
      }),
    ]);
    expect(scopes.body.scopes[1].leaseExpiresAtMs).toBe(lease.body.lease.expiresAtMs);
    const v1 = await get(listUrl(ns, "scopes", { volumeId: "v1" }), READ);
    expect(v1.body.scopes.map((s: any) => s.volumeId)).toEqual(["v1"]);

    const stats = await get(listUrl(ns, "stats"), READ);
    expect(stats.status).toBe(200);
    expect(stats.body).toMatchObject({ generations: 3, scopes: 2, lastMinute: { acquires: 2 } });
    for (const s of [scopeStub("v1", "s1", ""), scopeStub("v0", "", "k")]) {
      await runInDurableObject(s, (_o, st) => st.storage.deleteAlarm());
    }
  });

  it("stats count acquires, refusals by code, transfers and expiries, and claims per phase", async () => {
    const ns = unique("ns");
    expect((await post(claimUrl(ns, "x", "/acquire"), { generationId: "g1", ttlMs: TTL_MS })).status).toBe(200);
    expect((await post(claimUrl(ns, "x", "/acquire"), { generationId: "g2", ttlMs: TTL_MS })).status).toBe(409);
    const move = { fromGeneration: "g1", toGeneration: "g2" };
    expect((await post(claimUrl(ns, "x", "/transfer/prepare"), { ...move, token: "1", ttlMs: TTL_MS })).status).toBe(
      200,
    );
    expect(
      (await post(claimUrl(ns, "x", "/transfer/commit"), { ...move, expectedToken: "1", ttlMs: TTL_MS })).status,
    ).toBe(200);
    expect((await post(claimUrl(ns, "y", "/acquire"), { generationId: "g1", ttlMs: TTL_MS })).status).toBe(200);
    await settleListing(ns, [claimStub(ns, "x"), claimStub(ns, "y")]);
    const stats = await get(listUrl(ns, "stats"), READ);
    expect(stats.body.lastMinute).toMatchObject({
      acquires: 2,
      transfersCommitted: 1,
      transfersAborted: 0,
      conflicts: { claim_held: 1 },
    });
    expect(stats.body.lastHour).toEqual(stats.body.lastMinute);
    expect(stats.body.claimsByPhase).toEqual({ unowned: 0, owned: 2, reserved: 0, draining: 0 });
    for (const name of ["x", "y"]) await runInDurableObject(claimStub(ns, name), (_o, s) => s.storage.deleteAlarm());
  });
});

describe("counters at the listing shard", () => {
  it("a shard adds up counters in memory and forwards them; counters an earlier version stored go once", async () => {
    const ns = unique("ns");
    const shard = shardStub(ns, 0);
    // An earlier version kept accepted counters in `pending_counters`: leave some there.
    await runInDurableObject(shard, (_o, state) => {
      state.storage.sql.exec("INSERT INTO pending_counters (name, n) VALUES ('acquires', 5), ('expiries', 2)");
    });
    await restartObject(shard);
    const fresh = shardStub(ns, 0);
    await fresh.apply({ counters: { acquires: 1 }, atMs: Date.now() });
    await fresh.apply({ counters: { acquires: 2, expiries: 1 }, atMs: Date.now() });
    // Accepted counters are kept in memory, and the stored ones were taken out at start-up.
    await runInDurableObject(fresh, (_o, state) => {
      expect(state.storage.sql.exec("SELECT COUNT(*) AS n FROM pending_counters").one().n).toBe(0);
    });
    await settleListing(ns);
    const stats = await get(listUrl(ns, "stats"), READ);
    expect(stats.body.lastMinute).toMatchObject({ acquires: 8, expiries: 3 });
    // Forwarded once: a second forward has nothing to send.
    await fresh.forward();
    expect((await get(listUrl(ns, "stats"), READ)).body.lastMinute).toMatchObject({ acquires: 8, expiries: 3 });
  });
});

describe("what a crash between commit and delivery costs", () => {
  const acquire = (generationId: string) => ({ op: "acquire" as const, body: { generationId, ttlMs: TTL_MS } });

  it("an entry committed but never delivered is delivered when the object next starts", async () => {
    const ns = unique("ns");
    await runInDurableObject(claimStub(ns, "lost"), async (o: ClaimObject) => {
      o.hooks.holdIndexDelivery = true; // the instance "dies" before delivering
      expect((await o.command("lost", acquire("g1"))).status).toBe(200);
    });
    await restartObject(claimStub(ns, "lost"));
    expect((await get(listUrl(ns, "claims"), READ)).body.claims).toEqual([]);
    // Its next wake-up (any request, or its alarm) starts the new instance, which sends the row.
    await settleListing(ns, [claimStub(ns, "lost")]);
    const listed = (await get(listUrl(ns, "claims"), READ)).body.claims;
    expect(listed.map((c: any) => [c.name, c.ownerGeneration])).toEqual([["lost", "g1"]]);
    await runInDurableObject(claimStub(ns, "lost"), (_o, st) => st.storage.deleteAlarm());
  });

  it("a change whose delivery was lost is delivered by the object's own alarm, with nobody calling it", async () => {
    const ns = unique("ns");
    await runInDurableObject(claimStub(ns, "stale"), async (o: ClaimObject, state) => {
      expect((await o.command("stale", acquire("g1"))).status).toBe(200);
      await o.flushIndex(); // listed as owned by g1
      o.hooks.holdIndexDelivery = true; // the release's delivery never leaves
      const before = Date.now();
      expect((await o.command("stale", { op: "release", body: { generationId: "g1", token: 1n } })).status).toBe(200);
      // The release left no deadline, yet the alarm is armed within the listing's lag bound.
      const armedAt = await state.storage.getAlarm();
      expect(armedAt).not.toBeNull();
      expect(armedAt! - before).toBeLessThanOrEqual(2_000);
    });
    await settleListing(ns);
    expect((await get(listUrl(ns, "claims"), READ)).body.claims[0].phase).toBe("owned");
    // That alarm, run with nobody calling the claim, delivers what the release staged.
    await runInDurableObject(claimStub(ns, "stale"), async (o: ClaimObject) => {
      o.hooks.holdIndexDelivery = false;
      await o.alarm();
    });
    await settleListing(ns);
    const listed = (await get(listUrl(ns, "claims"), READ)).body.claims;
    expect(listed.map((c: any) => [c.name, c.phase])).toEqual([["stale", "unowned"]]);
    // Nothing is left to do: no alarm in the index (the claim's may still be armed: it fires for nothing).
    expect(await runInDurableObject(indexStub(ns), (_o, st) => st.storage.getAlarm())).toBeNull();
  });
});
