/* eslint-disable @typescript-eslint/no-explicit-any, @typescript-eslint/no-unsafe-return, @typescript-eslint/no-unsafe-argument -- JSON bodies under test are inspected loosely. */
// Every claim route over HTTP through the Worker entry: each success, each refusal code the
// route can return, and bad input of every kind, which must change nothing.
import { afterEach, describe, expect, it } from "vitest";
import { READ, WRITE, call, claimUrl, get, post, unique, clearTrackedAlarms, track } from "./claims-helpers.ts";

const TTL = 60_000;

/** A fresh claim in a fresh namespace, with URL helpers. */
function fresh() {
  const ns = unique("ns");
  const claim = unique();
  track(ns, claim);
  return {
    ns,
    claim,
    url: (suffix = "") => claimUrl(ns, claim, suffix),
    post: (suffix: string, body?: unknown, token: string | null = WRITE) =>
      post(claimUrl(ns, claim, suffix), body, token),
    read: async () => (await get(claimUrl(ns, claim))).body?.claim,
  };
}

function expectError(res: { status: number; body: any }, status: number, code: string): void {
  expect({ status: res.status, code: res.body?.error?.code }).toEqual({ status, code });
  expect(typeof res.body.error.message).toBe("string");
}

describe("claim routes", { timeout: 60_000 }, () => {
  afterEach(clearTrackedAlarms);

  describe("acquire", () => {
    it("creates the claim with token 1 and emits version 1", async () => {
      const c = fresh();
      const res = await c.post("/acquire", { generationId: "g1", ttlMs: TTL });
      expect(res.status).toBe(200);
      expect(Object.keys(res.body)).toEqual(["claim"]);
      expect(res.body.claim).toMatchObject({
        name: c.claim,
        ownerGeneration: "g1",
        fencingToken: "1",
        phase: "owned",
        previousOwner: "",
        pendingSuccessor: "",
        drainStatus: "",
        transferStatus: "",
        reason: "acquired",
        version: "1",
      });
      expect(res.body.claim.expiresAtMs - res.body.claim.acquiredAtMs).toBe(TTL);
      expect(res.body.claim.lastHeartbeatMs).toBe(res.body.claim.acquiredAtMs);
    });

    it("re-acquire by the owner extends without changing the token", async () => {
      const c = fresh();
      const first = (await c.post("/acquire", { generationId: "g1", ttlMs: TTL })).body.claim;
      const again = await c.post("/acquire", { generationId: "g1", ttlMs: 2 * TTL });
      expect(again.status).toBe(200);
      expect(again.body.claim).toMatchObject({ fencingToken: "1", phase: "owned", reason: "renewed" });
      expect(again.body.claim.expiresAtMs).toBeGreaterThan(first.expiresAtMs);
      // Never shortens.
      const shorter = await c.post("/acquire", { generationId: "g1", ttlMs: 100 });
      expect(shorter.body.claim.expiresAtMs).toBe(again.body.claim.expiresAtMs);
    });

    it("claim_held for another generation, carrying the record", async () => {
      const c = fresh();
      await c.post("/acquire", { generationId: "g1", ttlMs: TTL });
      const res = await c.post("/acquire", { generationId: "g2", ttlMs: TTL });
      expectError(res, 409, "claim_held");
      expect(res.body.error.claim).toMatchObject({ ownerGeneration: "g1", fencingToken: "1" });
    });

    it("claim_held for the owner itself with allowEmptyOnly", async () => {
      const c = fresh();
      await c.post("/acquire", { generationId: "g1", ttlMs: TTL });
      const res = await c.post("/acquire", { generationId: "g1", ttlMs: TTL, allowEmptyOnly: true });
      expectError(res, 409, "claim_held");
    });

    it("after release the next owner gets token+1 and previousOwner", async () => {
      const c = fresh();
      await c.post("/acquire", { generationId: "g1", ttlMs: TTL });
      await c.post("/release", { generationId: "g1", token: "1" });
      const res = await c.post("/acquire", { generationId: "g2", ttlMs: TTL, allowEmptyOnly: true });
      expect(res.body.claim).toMatchObject({ ownerGeneration: "g2", fencingToken: "2", previousOwner: "g1" });
    });
  });

  describe("renew", () => {
    it("extends the lease", async () => {
      const c = fresh();
      await c.post("/acquire", { generationId: "g1", ttlMs: TTL });
      const res = await c.post("/renew", { generationId: "g1", token: "1", ttlMs: 2 * TTL });
      expect(res.status).toBe(200);
      expect(res.body.claim).toMatchObject({ reason: "renewed", fencingToken: "1", version: "2" });
      expect(res.body.claim.expiresAtMs - res.body.claim.lastHeartbeatMs).toBe(2 * TTL);
    });

    it("refuses: claim_not_found, not_owner, stale_token", async () => {
      const c = fresh();
      expectError(await c.post("/renew", { generationId: "g1", token: "1", ttlMs: TTL }), 404, "claim_not_found");
      await c.post("/acquire", { generationId: "g1", ttlMs: TTL });
      expectError(await c.post("/renew", { generationId: "g2", token: "1", ttlMs: TTL }), 409, "not_owner");
      expectError(await c.post("/renew", { generationId: "g1", token: "2", ttlMs: TTL }), 409, "stale_token");
    });
  });

  describe("transfer", () => {
    async function reserved() {
      const c = fresh();
      await c.post("/acquire", { generationId: "old", ttlMs: TTL });
      const res = await c.post("/transfer/prepare", {
        fromGeneration: "old",
        toGeneration: "new",
        token: "1",
        ttlMs: TTL,
      });
      expect(res.status).toBe(200);
      return { c, record: res.body.claim };
    }

    it("prepare reserves for the successor", async () => {
      const { record } = await reserved();
      expect(record).toMatchObject({
        phase: "reserved",
        ownerGeneration: "old",
        pendingSuccessor: "new",
        transferStatus: "prepared",
        drainStatus: "complete",
        reason: "transfer_prepared",
        fencingToken: "1",
      });
    });

    it("prepare again for the same successor changes nothing", async () => {
      const { c, record } = await reserved();
      const again = await c.post("/transfer/prepare", {
        fromGeneration: "old",
        toGeneration: "new",
        token: "1",
        ttlMs: TTL,
      });
      expect(again.status).toBe(200);
      expect(again.body.claim).toEqual(record);
    });

    it("prepare refuses: not found, not_owner, stale_token, empty/self successor, concurrent_transfer", async () => {
      const c = fresh();
      const body = { fromGeneration: "old", toGeneration: "new", token: "1", ttlMs: TTL };
      expectError(await c.post("/transfer/prepare", body), 404, "claim_not_found");
      await c.post("/acquire", { generationId: "old", ttlMs: TTL });
      expectError(await c.post("/transfer/prepare", { ...body, fromGeneration: "x" }), 409, "not_owner");
      expectError(await c.post("/transfer/prepare", { ...body, token: "7" }), 409, "stale_token");
      const empty = await c.post("/transfer/prepare", { ...body, toGeneration: "" });
      expectError(empty, 400, "invalid_request");
      expect(empty.body.error.field).toBe("toGeneration");
      expectError(await c.post("/transfer/prepare", { ...body, toGeneration: "old" }), 400, "invalid_request");
      expect((await c.post("/transfer/prepare", body)).status).toBe(200);
      expectError(await c.post("/transfer/prepare", { ...body, toGeneration: "other" }), 409, "concurrent_transfer");
    });

    it("prepare on an unowned claim is not_owner", async () => {
      const c = fresh();
      await c.post("/acquire", { generationId: "old", ttlMs: TTL });
      await c.post("/release", { generationId: "old", token: "1" });
      const res = await c.post("/transfer/prepare", {
        fromGeneration: "old",
        toGeneration: "n",
        token: "1",
        ttlMs: TTL,
      });
      expectError(res, 409, "not_owner");
    });

    it("commit hands over with token+1; a retry returns the committed record", async () => {
      const { c } = await reserved();
      const body = { fromGeneration: "old", toGeneration: "new", expectedToken: "1", ttlMs: TTL };
      const res = await c.post("/transfer/commit", body);
      expect(res.status).toBe(200);
      expect(res.body.claim).toMatchObject({
        ownerGeneration: "new",
        fencingToken: "2",
        previousOwner: "old",
        pendingSuccessor: "",
        phase: "owned",
        transferStatus: "committed",
        reason: "transfer_committed",
      });
      const retry = await c.post("/transfer/commit", body);
      expect(retry.status).toBe(200);
      expect(retry.body.claim).toEqual(res.body.claim);
    });

    it("commit refuses: not found, no_transfer, concurrent_transfer, stale_token", async () => {
      const c = fresh();
      const body = { fromGeneration: "old", toGeneration: "new", expectedToken: "1", ttlMs: TTL };
      expectError(await c.post("/transfer/commit", body), 404, "claim_not_found");
      await c.post("/acquire", { generationId: "old", ttlMs: TTL });
      expectError(await c.post("/transfer/commit", body), 409, "no_transfer");
      await c.post("/transfer/prepare", { fromGeneration: "old", toGeneration: "new", token: "1", ttlMs: TTL });
      expectError(await c.post("/transfer/commit", { ...body, toGeneration: "x" }), 409, "concurrent_transfer");
      expectError(await c.post("/transfer/commit", { ...body, fromGeneration: "x" }), 409, "concurrent_transfer");
      expectError(await c.post("/transfer/commit", { ...body, expectedToken: "0" }), 409, "stale_token");
      expect((await c.read()).phase).toBe("reserved");
    });

    it("abort returns the claim to its owner", async () => {
      const { c } = await reserved();
      const body = { fromGeneration: "old", toGeneration: "new", expectedToken: "1" };
      const res = await c.post("/transfer/abort", body);
      expect(res.status).toBe(200);
      expect(res.body.claim).toMatchObject({
        phase: "owned",
        ownerGeneration: "old",
        pendingSuccessor: "",
        transferStatus: "aborted",
        reason: "transfer_aborted",
        fencingToken: "1",
      });
      // Not reserved and owned by `from`: success without a change.
      const again = await c.post("/transfer/abort", body);
      expect(again.status).toBe(200);
      expect(again.body.claim).toEqual(res.body.claim);
    });

    it("abort refuses: not found, no_transfer, stale_token, not_owner", async () => {
      const c = fresh();
      const body = { fromGeneration: "old", toGeneration: "new", expectedToken: "1" };
      expectError(await c.post("/transfer/abort", body), 404, "claim_not_found");
      await c.post("/acquire", { generationId: "old", ttlMs: TTL });
      expectError(await c.post("/transfer/abort", { ...body, fromGeneration: "x" }), 409, "no_transfer");
      await c.post("/transfer/prepare", { fromGeneration: "old", toGeneration: "new", token: "1", ttlMs: TTL });
      expectError(await c.post("/transfer/abort", { ...body, expectedToken: "2" }), 409, "stale_token");
      expectError(await c.post("/transfer/abort", { ...body, fromGeneration: "x" }), 409, "not_owner");
    });
  });

  describe("release", () => {
    it("releases, keeps the token, and a retried release succeeds", async () => {
      const c = fresh();
      await c.post("/acquire", { generationId: "g1", ttlMs: TTL });
      const res = await c.post("/release", { generationId: "g1", token: "1" });
      expect(res.status).toBe(200);
      expect(res.body.claim).toMatchObject({
        phase: "unowned",
        ownerGeneration: "",
        previousOwner: "g1",
        fencingToken: "1",
        reason: "released",
        version: "2",
      });
      const retry = await c.post("/release", { generationId: "g1", token: "1" });
      expect(retry.status).toBe(200);
      expect(retry.body.claim).toEqual(res.body.claim);
    });

    it("releasing a reserved claim drops the transfer", async () => {
      const c = fresh();
      await c.post("/acquire", { generationId: "g1", ttlMs: TTL });
      await c.post("/transfer/prepare", { fromGeneration: "g1", toGeneration: "g2", token: "1", ttlMs: TTL });
      const res = await c.post("/release", { generationId: "g1", token: "1" });
      expect(res.body.claim).toMatchObject({
        phase: "unowned",
        pendingSuccessor: "",
        transferStatus: "",
        drainStatus: "",
      });
    });

    it("refuses: not found, stale_token (a partitioned former owner), not_owner", async () => {
      const c = fresh();
      expectError(await c.post("/release", { generationId: "g1", token: "1" }), 404, "claim_not_found");
      await c.post("/acquire", { generationId: "g1", ttlMs: TTL });
      await c.post("/release", { generationId: "g1", token: "1" });
      await c.post("/acquire", { generationId: "g2", ttlMs: TTL });
      expectError(await c.post("/release", { generationId: "g1", token: "1" }), 409, "stale_token");
      expectError(await c.post("/release", { generationId: "g1", token: "2" }), 409, "not_owner");
      expect((await c.read()).ownerGeneration).toBe("g2");
    });
  });

  describe("get", () => {
    it("is claim_not_found for a claim never acquired, and creates nothing", async () => {
      const c = fresh();
      expectError(await get(c.url()), 404, "claim_not_found");
      expectError(await get(c.url(), READ), 404, "claim_not_found");
      // A mutation that needs an existing claim still finds none.
      expectError(await c.post("/renew", { generationId: "g", token: "0", ttlMs: TTL }), 404, "claim_not_found");
    });

    it("rejects query parameters it does not know", async () => {
      const c = fresh();
      await c.post("/acquire", { generationId: "g1", ttlMs: TTL });
      expectError(await get(c.url("?x=1")), 400, "invalid_request");
      // Found by the malformed-request fuzz: `__proto__` was assigned to a plain object's
      // prototype setter, so it vanished and the request passed as if it had no query.
      for (const key of ["__proto__", "constructor", "toString"]) {
        expectError(await get(c.url(`?${key}=1`)), 400, "invalid_request");
      }
    });
  });

  describe("names", () => {
    it("a %2F inside a claim name is one name, distinct from a nested path", async () => {
      const ns = unique("ns");
      track(ns, "a/b");
      const slashed = await post(claimUrl(ns, "a/b", "/acquire"), { generationId: "g1", ttlMs: TTL });
      expect(slashed.status).toBe(200);
      expect(slashed.body.claim.name).toBe("a/b");
      expectError(await get(claimUrl(ns, "a")), 404, "claim_not_found");
      expect((await get(claimUrl(ns, "a/b"))).body.claim.name).toBe("a/b");
    });

    it("a 256-byte UTF-8 name is accepted, 257 bytes is not", async () => {
      const ns = unique("ns");
      const ok = "é".repeat(128); // 256 bytes
      track(ns, ok);
      expect((await post(claimUrl(ns, ok, "/acquire"), { generationId: "g", ttlMs: TTL })).status).toBe(200);
      const res = await post(claimUrl(ns, ok + "x", "/acquire"), { generationId: "g", ttlMs: TTL });
      expectError(res, 400, "invalid_request");
      expect(res.body.error.field).toBe("claim");
    });

    it.each([
      ["control character", "a\u0001b"],
      ["DEL", "a\u007fb"],
      ["newline", "a\nb"],
      ["C1 control", "a\u0085b"],
    ])("rejects a claim name with a %s", async (_label, name) => {
      const res = await post(claimUrl(unique("ns"), name, "/acquire"), { generationId: "g", ttlMs: TTL });
      expectError(res, 400, "invalid_request");
      expect(res.body.error.field).toBe("claim");
    });

    it("rejects malformed percent-encoding", async () => {
      const res = await post(`http://x/v1/ns/${unique("ns")}/claims/%E0%A4%A/acquire`, {
        generationId: "g",
        ttlMs: TTL,
      });
      expectError(res, 400, "invalid_request");
    });
  });

  describe("bad input changes nothing", () => {
    const cases: [string, string, unknown, string][] = [
      ["bad JSON", "/acquire", "{not json", "body"],
      ["a JSON array", "/acquire", "[]", "body"],
      ["unknown field", "/acquire", { generationId: "g1", ttlMs: TTL, extra: 1 }, "extra"],
      ["missing field", "/acquire", { ttlMs: TTL }, "generationId"],
      ["ttl below 100 ms", "/acquire", { generationId: "g1", ttlMs: 99 }, "ttlMs"],
      ["ttl above 24 h", "/acquire", { generationId: "g1", ttlMs: 86_400_001 }, "ttlMs"],
      ["fractional ttl", "/acquire", { generationId: "g1", ttlMs: 1000.5 }, "ttlMs"],
      ["ttl as string", "/acquire", { generationId: "g1", ttlMs: "1000" }, "ttlMs"],
      ["empty generation id", "/acquire", { generationId: "", ttlMs: TTL }, "generationId"],
      ["control char in generation id", "/acquire", { generationId: "g\u0000", ttlMs: TTL }, "generationId"],
      ["257-byte generation id", "/acquire", { generationId: "x".repeat(257), ttlMs: TTL }, "generationId"],
      [
        "allowEmptyOnly not boolean",
        "/acquire",
        { generationId: "g1", ttlMs: TTL, allowEmptyOnly: "yes" },
        "allowEmptyOnly",
      ],
      ["bad operation id", "/acquire", { generationId: "g1", ttlMs: TTL, operationId: "" }, "operationId"],
      ["token as number", "/renew", { generationId: "g1", token: 1, ttlMs: TTL }, "token"],
      ["token 0x1", "/renew", { generationId: "g1", token: "0x1", ttlMs: TTL }, "token"],
      ["token 1.0", "/renew", { generationId: "g1", token: "1.0", ttlMs: TTL }, "token"],
      ["token -1", "/release", { generationId: "g1", token: "-1" }, "token"],
      ["token empty", "/release", { generationId: "g1", token: "" }, "token"],
      ["token 007", "/release", { generationId: "g1", token: "007" }, "token"],
      ["token +1", "/release", { generationId: "g1", token: "+1" }, "token"],
      ["token 2^64", "/release", { generationId: "g1", token: "18446744073709551616" }, "token"],
      [
        "expectedToken 01",
        "/transfer/commit",
        { fromGeneration: "g1", toGeneration: "g2", expectedToken: "01", ttlMs: TTL },
        "expectedToken",
      ],
      [
        "abort with ttlMs",
        "/transfer/abort",
        { fromGeneration: "g1", toGeneration: "g2", expectedToken: "1", ttlMs: TTL },
        "ttlMs",
      ],
      [
        "prepare to a control char",
        "/transfer/prepare",
        { fromGeneration: "g1", toGeneration: "\u0007", token: "1", ttlMs: TTL },
        "toGeneration",
      ],
    ];

    it.each(cases)("%s → 400 invalid_request naming the field", async (_label, route, body, field) => {
      const c = fresh();
      const before = (await c.post("/acquire", { generationId: "g1", ttlMs: TTL })).body.claim;
      const res = await c.post(route, body);
      expectError(res, 400, "invalid_request");
      expect(res.body.error.field).toBe(field);
      expect(await c.read()).toEqual(before);
    });

    it("an invalid body on a never-created claim creates nothing", async () => {
      const c = fresh();
      expectError(await c.post("/acquire", { generationId: "g1", ttlMs: 1 }), 400, "invalid_request");
      expectError(await get(c.url()), 404, "claim_not_found");
    });

    it("accepts a 65,536-byte body and refuses 65,537 bytes with 413", async () => {
      const c = fresh();
      const json = JSON.stringify({ generationId: "g1", ttlMs: TTL });
      const exact = json + " ".repeat(65_536 - json.length);
      expect(new TextEncoder().encode(exact).byteLength).toBe(65_536);
      const tooBig = exact + " ";
      expectError(await c.post("/acquire", tooBig), 413, "payload_too_large");
      expectError(await get(c.url()), 404, "claim_not_found");
      expect((await c.post("/acquire", exact)).status).toBe(200);
    });
  });

  describe("auth", () => {
    it("401 without a token and with an unknown token, before anything else", async () => {
      const c = fresh();
      expectError(await call("POST", c.url("/acquire"), { generationId: "g", ttlMs: TTL }, null), 401, "unauthorized");
      expectError(
        await call("POST", c.url("/acquire"), { generationId: "g", ttlMs: TTL }, "nope-nope-nope"),
        401,
        "unauthorized",
      );
      // Even bad input is 401 first.
      expectError(await call("POST", c.url("/acquire"), "{bad", null), 401, "unauthorized");
      expectError(await call("GET", c.url(), undefined, null), 401, "unauthorized");
      expectError(await get(c.url()), 404, "claim_not_found");
    });

    it("403 for a read token writing; reads are allowed", async () => {
      const c = fresh();
      expectError(await c.post("/acquire", { generationId: "g", ttlMs: TTL }, READ), 403, "forbidden");
      expectError(await get(c.url()), 404, "claim_not_found");
      await c.post("/acquire", { generationId: "g", ttlMs: TTL });
      expect((await get(c.url(), READ)).status).toBe(200);
    });

    it("403 for a token of another namespace", async () => {
      const claim = unique();
      track("alpha", claim);
      const body = { generationId: "g", ttlMs: TTL };
      expectError(await post(claimUrl("beta", claim, "/acquire"), body, "test-write-alpha"), 403, "forbidden");
      expectError(await get(claimUrl("beta", claim), "test-write-alpha"), 403, "forbidden");
      expect((await post(claimUrl("alpha", claim, "/acquire"), body, "test-write-alpha")).status).toBe(200);
      // Namespaces are tenants: the same claim name in beta is a different claim.
      expectError(await get(claimUrl("beta", claim)), 404, "claim_not_found");
    });
  });

  describe("watch route", () => {
    it("a GET without an upgrade is 400 invalid_request", async () => {
      const c = fresh();
      const res = await get(c.url("/watch"), READ);
      expectError(res, 400, "invalid_request");
    });

    it("a bad afterVersion is 400 before any upgrade", async () => {
      const c = fresh();
      expectError(await get(c.url("/watch?afterVersion=01"), READ), 400, "invalid_request");
    });
  });

  it("unknown claim sub-routes are 404 not_found", async () => {
    const c = fresh();
    expectError(await c.post("/steal", {}), 404, "not_found");
  });
});
