// Operators through the Worker (docs/protocol.md#roles-names-and-whoami, #eviction): whoami for
// each role, claim and scope eviction over HTTP with what watchers hear, and who may evict.
import { exports } from "cloudflare:workers";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { READ, WRITE, claimUrl, clearTrackedAlarms, get, openWatch, post, track, unique } from "./claims-helpers.ts";
import { acquire, openWatch as openScopeWatch, post as scopePost, uniqueScope } from "./coord-helpers.ts";

const ADMIN = "test-admin-all";

beforeAll(async () => {
  await exports.default.fetch("http://x/healthz");
}, 60_000);

afterEach(clearTrackedAlarms);

describe("GET /v1/ns/{ns}/whoami", () => {
  it("names each token (its configured name, else its position) and its role", async () => {
    const ns = unique("ns");
    const url = `http://x/v1/ns/${ns}/whoami`;
    expect((await get(url, READ)).body).toEqual({ name: "token#1", role: "read" });
    expect((await get(url, WRITE)).body).toEqual({ name: "token#0", role: "write" });
    expect((await get(url, ADMIN)).body).toEqual({ name: "test-admin", role: "admin" });
    // Outside a token's namespaces it is refused like any route.
    expect((await get(url, "test-write-alpha")).status).toBe(403);
  });
});

describe("POST …/claims/{claim}/evict", () => {
  it("needs the admin role: write and read tokens are refused 403 and change nothing", async () => {
    const ns = unique("ns");
    track(ns, "job");
    const a = await post(claimUrl(ns, "job", "/acquire"), { generationId: "a", ttlMs: 60_000 });
    for (const token of [WRITE, READ]) {
      const res = await post(claimUrl(ns, "job", "/evict"), {}, token);
      expect(res.status).toBe(403);
      expect(res.body.error.code).toBe("forbidden");
    }
    expect((await get(claimUrl(ns, "job"))).body).toEqual(a.body);
  });

  it("answers the unowned record; watchers get the evicted event with the note; the old token is 409 evicted", async () => {
    const ns = unique("ns");
    track(ns, "job");
    await post(claimUrl(ns, "job", "/acquire"), { generationId: "a", ttlMs: 60_000 });
    const watch = await openWatch(ns, "job");
    expect((await watch.next()).type).toBe("snapshot");
    const res = await post(claimUrl(ns, "job", "/evict"), { note: "INC-42" }, ADMIN);
    expect(res.status).toBe(200);
    expect(res.body.claim).toMatchObject({
      phase: "unowned",
      previousOwner: "a",
      reason: "evicted",
      fencingToken: "1",
    });
    expect(await watch.next()).toEqual({
      type: "event",
      reason: "evicted",
      claim: res.body.claim,
      timeMs: expect.any(Number),
      note: "INC-42",
    });
    const renew = await post(claimUrl(ns, "job", "/renew"), { generationId: "a", token: "1", ttlMs: 60_000 });
    expect(renew.status).toBe(409);
    expect(renew.body.error).toMatchObject({ code: "evicted", claim: res.body.claim });
    const next = await post(claimUrl(ns, "job", "/acquire"), { generationId: "b", ttlMs: 60_000 });
    expect(next.body.claim.fencingToken).toBe("2");
    watch.ws.close(1000, "done");
  });

  it("refuses a note over 256 bytes and unknown fields (400, field named); 404 for a claim never acquired", async () => {
    const ns = unique("ns");
    const tooLong = await post(claimUrl(ns, "job", "/evict"), { note: "x".repeat(257) }, ADMIN);
    expect(tooLong.status).toBe(400);
    expect(tooLong.body.error.field).toBe("note");
    expect((await post(claimUrl(ns, "job", "/evict"), { why: "x" }, ADMIN)).status).toBe(400);
    const missing = await post(claimUrl(ns, "job", "/evict"), {}, ADMIN);
    expect(missing.status).toBe(404);
    expect(missing.body.error.code).toBe("claim_not_found");
  });
});

describe("POST {scope}/evict", () => {
  it("ends the lease: unlocked with evicted and note, the holder's keepalive is 410, the next grant has epoch+1", async () => {
    const scope = uniqueScope();
    const lease = await acquire(scope, "stuck", { ttlMs: 60_000 });
    const watch = await openScopeWatch(scope);
    expect((await watch.next()).type).toBe("ready");
    expect((await scopePost(`${scope.url}/evict`, {}, WRITE)).status).toBe(403);
    const res = await scopePost(`${scope.url}/evict`, { note: "INC-43" }, ADMIN);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      volumeId: scope.volumeId,
      objectStoreId: scope.objectStoreId,
      generation: "0",
      root: null,
    });
    expect(await watch.next()).toMatchObject({
      type: "event",
      processId: "stuck",
      unlocked: true,
      evicted: true,
      note: "INC-43",
    });
    const keepalive = await scopePost(`${scope.url}/leases/${lease.leaseId}/keepalive`, {});
    expect(keepalive.status).toBe(410);
    expect(keepalive.body.error.code).toBe("lease_lost");
    const next = await acquire(scope, "next", { ttlMs: 60_000 });
    expect(next.epoch).toBe("2");
    watch.ws.close(1000, "done");
  });
});
