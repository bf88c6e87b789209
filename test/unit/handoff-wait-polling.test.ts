// How often a waiting successor asks the server: with a live watch of the claim, only when
// the watch says the claim may have become acquirable (plus a rare safety poll); without
// one, every acquireIntervalMs. A standby waiting on many claims must not cost requests per
// second waited.
import { describe, expect, it } from "vitest";
import { advanceBy, flushMicrotasks, rig } from "./handoff-fixtures.ts";

describe("waitForOwnership polling", () => {
  it("with a live watch it does not poll at acquireIntervalMs, and a release wakes it at once", async () => {
    const r = rig();
    const claim = `c-${crypto.randomUUID()}`;
    const held = await r.memory.acquireClaim({ claimName: claim, generationId: "gen-a", ttlMs: 60_000 });
    let attempts = 0;
    r.faults.acquireClaim = () => {
      attempts++;
      return undefined;
    };
    const b = await r.open("gen-b");
    expect(b.cfg.watchedAcquireIntervalMs).toBe(10_000);
    const waiting = b.claim(claim).waitForOwnership();
    await advanceBy(r.clock, 5_000);
    // The first attempt only: 5 s at a 10 ms acquireIntervalMs would have been ≈ 500.
    expect(attempts).toBe(1);

    await r.memory.releaseClaim({ claimName: claim, generationId: "gen-a", token: held.fencingToken });
    await flushMicrotasks(50);
    const lease = await waiting;
    expect(lease.token).toBe(held.fencingToken + 1n);
    expect(attempts).toBe(2);
    await b.close();
  });

  it("the safety poll still runs every watchedAcquireIntervalMs", async () => {
    const r = rig();
    const claim = `c-${crypto.randomUUID()}`;
    await r.memory.acquireClaim({ claimName: claim, generationId: "gen-a", ttlMs: 60_000 });
    let attempts = 0;
    r.faults.acquireClaim = () => {
      attempts++;
      return undefined;
    };
    const b = await r.open("gen-b", { watchedAcquireIntervalMs: 1_000 });
    const controller = new AbortController();
    const waiting = b
      .claim(claim)
      .waitForOwnership({ signal: controller.signal })
      .catch(() => undefined);
    await advanceBy(r.clock, 3_500);
    expect(attempts).toBe(4);
    controller.abort();
    await waiting;
    await b.close();
  });

  it("without a watch it polls every acquireIntervalMs", async () => {
    const r = rig();
    const claim = `c-${crypto.randomUUID()}`;
    await r.memory.acquireClaim({ claimName: claim, generationId: "gen-a", ttlMs: 60_000 });
    let attempts = 0;
    r.faults.acquireClaim = () => {
      attempts++;
      return undefined;
    };
    const b = await r.open("gen-b", { acquireIntervalMs: 100 });
    const controller = new AbortController();
    const waiting = b
      .claim(claim)
      .waitForOwnership({ watch: false, signal: controller.signal })
      .catch(() => undefined);
    await advanceBy(r.clock, 1_000);
    expect(attempts).toBeGreaterThanOrEqual(9);
    controller.abort();
    await waiting;
    await b.close();
  });

  it("watchedAcquireIntervalMs below acquireIntervalMs is refused at construction", async () => {
    const r = rig();
    await expect(r.open("gen-b", { acquireIntervalMs: 500, watchedAcquireIntervalMs: 100 })).rejects.toMatchObject({
      code: "invalid_request",
      details: { field: "watchedAcquireIntervalMs" },
    });
  });
});
