/* eslint-disable @typescript-eslint/no-unsafe-argument, @typescript-eslint/no-unsafe-return -- JSON bodies under test are inspected loosely. */
// What keeps the listing cheap at scale (docs/listing.md, docs/scale.md): renewals and
// keepalives deliver nothing, every page reads at most `limit + 1` rows whatever the filter,
// stats read tallies, queued waiters reach the listing, and nothing stays armed once idle.
import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { ClaimObject } from "./test-entry.ts";
import type { IndexEntry } from "../../src/core/listing-entry.ts";
import { objectName } from "../../src/durable/object-names.ts";
import type { NamespaceIndex } from "./test-entry.ts";
import { testEnv } from "./test-env.ts";
import { READ, claimStub, claimUrl, get, post, unique } from "./claims-helpers.ts";
import { del, scopeStub, uniqueScope } from "./coord-helpers.ts";
import { armedShards, settleListing } from "./listing-helpers.ts";
import { restartObject } from "./object-helpers.ts";

const TTL_MS = 60_000;

function indexStub(ns: string): DurableObjectStub<NamespaceIndex> {
  return testEnv.INDEX.getByName(objectName(ns, "index"));
}

async function outboxSeq(stub: DurableObjectStub): Promise<number> {
  return runInDurableObject(
    stub,
    (_o, state) => state.storage.sql.exec<{ seq: number }>("SELECT seq FROM index_outbox WHERE id = 1").one().seq,
  );
}

describe("what reaches the listing", () => {
  it("a renewal, and an acquire that extends the caller's own claim, stage and deliver nothing", async () => {
    const ns = unique("ns");
    const acquired = await post(claimUrl(ns, "r", "/acquire"), { generationId: "g1", ttlMs: TTL_MS });
    expect(acquired.status).toBe(200);
    await settleListing(ns, [claimStub(ns, "r")]);
    const seq = await outboxSeq(claimStub(ns, "r"));
    for (let i = 0; i < 3; i++) {
      const renewed = await post(claimUrl(ns, "r", "/renew"), { generationId: "g1", token: "1", ttlMs: TTL_MS });
      expect(renewed.status).toBe(200);
    }
    expect((await post(claimUrl(ns, "r", "/acquire"), { generationId: "g1", ttlMs: TTL_MS })).status).toBe(200);
    expect(await outboxSeq(claimStub(ns, "r"))).toBe(seq);
    expect(await armedShards(ns)).toEqual([]);
    // A restarted instance (a deploy, an eviction) re-sends nothing its shard acknowledged.
    await restartObject(claimStub(ns, "r"));
    const renewed = await post(claimUrl(ns, "r", "/renew"), { generationId: "g1", token: "1", ttlMs: TTL_MS });
    expect(renewed.status).toBe(200);
    await runInDurableObject(claimStub(ns, "r"), (o: ClaimObject) => o.flushIndex());
    expect(await armedShards(ns)).toEqual([]);
    // The listing keeps the acquire's deadline (it may trail renewals); a GET is exact.
    const listed = (await get(`http://x/v1/ns/${ns}/claims`, READ)).body.claims[0];
    expect(listed.expiresAtMs).toBe(acquired.body.claim.expiresAtMs);
    const exact = (await get(claimUrl(ns, "r"), READ)).body.claim;
    expect(exact.expiresAtMs).toBeGreaterThanOrEqual(listed.expiresAtMs);
    // An ownership change is delivered again.
    expect((await post(claimUrl(ns, "r", "/release"), { generationId: "g1", token: "1" })).status).toBe(200);
    expect(await outboxSeq(claimStub(ns, "r"))).toBe(seq + 1);
    await settleListing(ns, [claimStub(ns, "r")]);
    expect((await get(`http://x/v1/ns/${ns}/claims`, READ)).body.claims[0].phase).toBe("unowned");
  });

  it("a keepalive delivers nothing; queued waiters show as wantLock and leave it", async () => {
    const scope = uniqueScope();
    const stub = scopeStub(scope);
    const lease = (await post(`${scope.url}/leases`, { participantId: "holder-a", ttlMs: TTL_MS })).body.lease;
    await settleListing(scope.ns, [stub]);
    const seq = await outboxSeq(stub);
    expect((await post(`${scope.url}/leases/${lease.leaseId}/keepalive`, { ttlMs: TTL_MS })).status).toBe(200);
    expect(await outboxSeq(stub)).toBe(seq);

    const waiterId = crypto.randomUUID();
    const waiting = post(`${scope.url}/leases`, { participantId: "b", waitMs: 60_000, waiterId });
    await expect.poll(() => outboxSeq(stub)).toBe(seq + 1);
    await settleListing(scope.ns, [stub]);
    const listed = async () => (await get(`http://x/v1/ns/${scope.ns}/scopes`, READ)).body.scopes[0];
    expect(await listed()).toMatchObject({ held: true, holder: "holder-a", wantLock: true });

    expect((await del(`${scope.url}/leases/${waiterId}`)).status).toBe(204);
    expect((await waiting).status).toBe(409);
    await settleListing(scope.ns, [stub]);
    expect(await listed()).toMatchObject({ held: true, holder: "holder-a", wantLock: false });
    await del(`${scope.url}/leases/${lease.leaseId}`);
    await settleListing(scope.ns, [stub]);
    expect(await listed()).toMatchObject({ held: false, holder: "", wantLock: false, leaseExpiresAtMs: 0 });
  });
});

function claimEntry(name: string, phase: "owned" | "unowned" | "reserved", owner: string): IndexEntry {
  return {
    kind: "claim",
    key: name,
    record: {
      name,
      ownerGeneration: owner,
      fencingToken: "1",
      phase,
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

describe("listing cost does not grow with the namespace", () => {
  it("every page, with any filter, reads at most limit + 1 rows; stats follow phase changes from tallies", async () => {
    const ns = unique("ns");
    const entries: IndexEntry[] = [];
    for (let i = 0; i < 6_000; i++) {
      const name = `c-${String(i).padStart(5, "0")}`;
      // A rare phase and a rare owner, so that a scan would have to skip thousands of rows.
      entries.push(claimEntry(name, i % 500 === 0 ? "reserved" : i % 2 === 0 ? "owned" : "unowned", `g${i % 300}`));
      entries.push({
        kind: "generation",
        key: `gen-${i}`,
        record: {
          id: `gen-${i}`,
          service: `svc-${i % 200}`,
          instanceId: "i",
          state: i % 400 === 0 ? "active" : "retired",
          startedAtMs: 1,
          updatedAtMs: 1,
          reason: "",
          leaseExpiresAtMs: 0,
          leaseEpoch: "0",
        },
      });
      entries.push({
        kind: "scope",
        key: `v${i % 250}\u0000s\u0000${i}`,
        record: {
          volumeId: `v${i % 250}`,
          objectStoreId: "s",
          key: String(i),
          generation: "0",
          held: false,
          holder: "",
          wantLock: false,
          leaseExpiresAtMs: 0,
        },
      });
    }
    const queries = [
      { kind: "claim", filters: {} },
      { kind: "claim", filters: { phase: "reserved" } },
      { kind: "claim", filters: { owner: "g7" } },
      { kind: "claim", filters: { owner: "g0", phase: "reserved" } },
      { kind: "claim", filters: { phase: "owned" }, prefix: "c-05" },
      { kind: "generation", filters: { service: "svc-3" } },
      { kind: "generation", filters: { state: "active" } },
      { kind: "generation", filters: { service: "svc-0", state: "active" } },
      { kind: "scope", filters: { volumeId: "v17" } },
    ] as const;
    await runInDurableObject(indexStub(ns), (o: NamespaceIndex) => {
      for (let i = 0; i < entries.length; i += 2_000) o.seed(entries.slice(i, i + 2_000));
      for (const q of queries) {
        for (const limit of [1, 7, 100]) {
          let after: string | undefined;
          for (let page = 0; page < 3; page++) {
            const answer = o.page({
              kind: q.kind,
              after,
              prefix: "prefix" in q ? q.prefix : undefined,
              filters: q.filters,
              limit,
            });
            expect(answer.rowsRead, `${JSON.stringify(q)} limit ${limit}`).toBeLessThanOrEqual(limit + 1);
            if (!answer.more) break;
            after = answer.lastKey;
          }
        }
      }
      expect(o.stats()).toMatchObject({
        claimsByPhase: { owned: 2_988, unowned: 3_000, reserved: 12, draining: 0 },
        generations: 6_000,
        scopes: 6_000,
      });
      // A newer entry moves its claim between tallies; an older one changes nothing.
      o.applyBatch({ entries: [{ seq: 2, value: claimEntry("c-00000", "unowned", "") }], counters: {}, atMs: 1 });
      o.applyBatch({ entries: [{ seq: 1, value: claimEntry("c-00000", "owned", "g0") }], counters: {}, atMs: 1 });
      expect(o.stats().claimsByPhase).toMatchObject({ reserved: 11, unowned: 3_001 });
    });
  }, 120_000);
});

describe("idle costs nothing", () => {
  it("once released and delivered, the claim, its shard and the index have nothing armed", async () => {
    const ns = unique("ns");
    expect((await post(claimUrl(ns, "i", "/acquire"), { generationId: "g1", ttlMs: TTL_MS })).status).toBe(200);
    expect((await post(claimUrl(ns, "i", "/release"), { generationId: "g1", token: "1" })).status).toBe(200);
    await settleListing(ns, [claimStub(ns, "i")]);
    // The claim's one alarm (its delivery's safety net, or its old deadline) finds nothing due
    // and re-arms nothing (it may have fired already: then nothing is armed either).
    await runDurableObjectAlarm(claimStub(ns, "i"));
    expect(await runInDurableObject(claimStub(ns, "i"), (_o, state) => state.storage.getAlarm())).toBeNull();
    expect(await armedShards(ns)).toEqual([]);
    expect(await runInDurableObject(indexStub(ns), (_o, state) => state.storage.getAlarm())).toBeNull();
  });
});
