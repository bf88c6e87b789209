// POST /v1/ns/{ns}/batch (docs/protocol.md#batch): each op answers exactly what its single route would,
// ops are independent and share operation ids with the single routes, and only a malformed
// batch, or auth, fails the whole request — changing nothing.
import { afterEach, describe, expect, it } from "vitest";
import { READ, WRITE, call, claimUrl, clearTrackedAlarms, get, post, track, unique } from "./claims-helpers.ts";

afterEach(clearTrackedAlarms);

const batchUrl = (ns: string): string => `http://x/v1/ns/${encodeURIComponent(ns)}/batch`;
type Result = {
  status: number;
  body: { claim?: { fencingToken: string; version: string }; error?: { code: string; field?: string } };
};

/** The answer without server times, to compare a batch op with its single route. */
function timeless(value: unknown): unknown {
  return JSON.parse(JSON.stringify(value), (key, v: unknown) =>
    key.endsWith("AtMs") || key === "lastHeartbeatMs" ? 0 : v,
  );
}

describe("batch", () => {
  it("runs independent ops, one result per op in order", async () => {
    const ns = unique("ns");
    const claims = ["a", "b", "c"];
    claims.forEach((c) => track(ns, c));
    const res = await post(batchUrl(ns), {
      ops: claims.map((claim) => ({ op: "acquire", claim, generationId: "g1", ttlMs: 60_000 })),
    });
    expect(res.status).toBe(200);
    const results = res.body.results as Result[];
    expect(results.map((r) => [r.status, r.body.claim?.fencingToken])).toEqual([
      [200, "1"],
      [200, "1"],
      [200, "1"],
    ]);
    for (const claim of claims) expect((await get(claimUrl(ns, claim))).body.claim.ownerGeneration).toBe("g1");
  });

  it("answers each op exactly as its single route would, failures included", async () => {
    const [viaBatch, viaRoutes] = [unique("ns"), unique("ns")];
    for (const ns of [viaBatch, viaRoutes]) {
      for (const claim of ["h1", "h2", "h3", "h4"]) {
        track(ns, claim);
        await post(claimUrl(ns, claim, "/acquire"), { generationId: "owner", ttlMs: 60_000 });
      }
    }
    const ops = [
      { op: "acquire", claim: "h1", generationId: "other", ttlMs: 60_000 }, // 409 claim_held with the record
      { op: "renew", claim: "absent", generationId: "g", token: "1", ttlMs: 1_000 }, // 404
      { op: "release", claim: "h2", generationId: "owner", token: "7" }, // 409 stale_token
      { op: "commit", claim: "h3", fromGeneration: "owner", toGeneration: "next", expectedToken: "1", ttlMs: 1_000 }, // 409 no_transfer
      { op: "prepare", claim: "h4", fromGeneration: "owner", toGeneration: "owner", token: "1", ttlMs: 1_000 }, // 400
      { op: "abort", claim: "x", fromGeneration: "a", toGeneration: "b", expectedToken: "007" }, // 400 field expectedToken
      { op: "acquire", claim: "y", generationId: "g" }, // 400 field ttlMs
      { op: "acquire", claim: "..", generationId: "g", ttlMs: 1_000 }, // 400 field claim
    ];
    const batch = await post(batchUrl(viaBatch), { ops });
    expect(batch.status).toBe(200);
    const single: Result[] = [];
    const path = {
      acquire: "/acquire",
      renew: "/renew",
      release: "/release",
      prepare: "/transfer/prepare",
      commit: "/transfer/commit",
      abort: "/transfer/abort",
    } as const;
    for (const { op, claim, ...body } of ops) {
      if (claim === "..") {
        single.push({ status: 400, body: { error: { code: "invalid_request", field: "claim" } } });
        continue;
      }
      const r = await post(claimUrl(viaRoutes, claim, path[op as keyof typeof path]), body);
      single.push({ status: r.status, body: r.body as Result["body"] });
    }
    const results = batch.body.results as Result[];
    expect(results.map((r) => r.status)).toEqual([409, 404, 409, 409, 400, 400, 400, 400]);
    expect(results.map((r) => r.body.error?.field)).toEqual([
      undefined,
      undefined,
      undefined,
      undefined,
      "toGeneration",
      "expectedToken",
      "ttlMs",
      "claim",
    ]);
    for (let i = 0; i < ops.length - 1; i++) expect(timeless(results[i]), `op ${i}`).toEqual(timeless(single[i]));
  });

  it("shares operation ids with the single routes (replay and conflict)", async () => {
    const ns = unique("ns");
    track(ns, "c");
    const op = { op: "acquire", claim: "c", generationId: "g1", ttlMs: 60_000, operationId: "op-1" };
    const first = ((await post(batchUrl(ns), { ops: [op] })).body.results as Result[])[0]!;
    const replay = await post(claimUrl(ns, "c", "/acquire"), {
      generationId: "g1",
      ttlMs: 60_000,
      operationId: "op-1",
    });
    expect(replay.status).toBe(first.status);
    expect(replay.body).toEqual(first.body);
    const conflict = ((await post(batchUrl(ns), { ops: [{ ...op, ttlMs: 5_000 }] })).body.results as Result[])[0]!;
    expect([conflict.status, conflict.body.error?.code]).toEqual([409, "operation_id_conflict"]);
  });

  it.each([
    ["not a list", { ops: { op: "acquire" } }],
    ["no ops", { ops: [] }],
    [
      "129 ops",
      {
        ops: Array.from({ length: 129 }, (_, i) => ({
          op: "acquire",
          claim: `c${i}`,
          generationId: "g",
          ttlMs: 1_000,
        })),
      },
    ],
    ["an unknown op", { ops: [{ op: "steal", claim: "c" }] }],
    ["a claim that is not a string", { ops: [{ op: "acquire", claim: 7, generationId: "g", ttlMs: 1_000 }] }],
    ["a claim twice", { ops: ["c", "c"].map((claim) => ({ op: "acquire", claim, generationId: "g", ttlMs: 1_000 })) }],
    [
      "an unknown top-level field",
      { ops: [{ op: "acquire", claim: "c", generationId: "g", ttlMs: 1_000 }], atomic: true },
    ],
  ])("fails whole with 400 and changes nothing for %s", async (_name, body) => {
    const ns = unique("ns");
    const res = await post(batchUrl(ns), body);
    expect([res.status, res.body.error.code]).toEqual([400, "invalid_request"]);
    expect((await get(claimUrl(ns, "c"))).status).toBe(404);
    expect((await get(claimUrl(ns, "c0"))).status).toBe(404);
  });

  it("fails whole for auth: 401 without a token, 403 for a read token, nothing changed", async () => {
    const ns = unique("ns");
    const body = { ops: [{ op: "acquire", claim: "c", generationId: "g", ttlMs: 1_000 }] };
    expect((await call("POST", batchUrl(ns), body, null)).status).toBe(401);
    expect((await call("POST", batchUrl(ns), body, READ)).status).toBe(403);
    expect((await get(claimUrl(ns, "c"), WRITE)).status).toBe(404);
  });
});
