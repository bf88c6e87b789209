import { describe, expect, it } from "vitest";
import { claimUrl, get, post, unique } from "./claims-helpers.ts";

describe("claim routes: smoke", () => {
  it("acquires and reads", async () => {
    const ns = unique("ns");
    const claim = unique();
    const a = await post(claimUrl(ns, claim, "/acquire"), { generationId: "g1", ttlMs: 1000 });
    expect(a.status).toBe(200);
    expect(a.body.claim).toMatchObject({ ownerGeneration: "g1", fencingToken: "1", phase: "owned", version: "1" });
    const g = await get(claimUrl(ns, claim));
    expect(g.status).toBe(200);
    expect(g.body).toEqual(a.body);
  });
});
