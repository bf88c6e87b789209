// How often a waiting successor asks the server: with a live watch of the claim, only when
// the watch says the claim may have become acquirable (plus a rare safety poll); without
// one, every acquireIntervalMs. A standby waiting on many claims must not cost requests per
// second waited.
import { describe, expect, it } from "vitest";
import type { GenerationSessionConfig } from "../../src/client/handoff/index.ts";
import type { ClaimWaitOptions } from "../../src/client/handoff/session-claim.ts";
import { advanceBy, flushMicrotasks, rig } from "./handoff-fixtures.ts";

/** Generation `gen-b` waiting for a claim `gen-a` holds for a minute, its acquire attempts counted. */
async function waitingSuccessor(config: Partial<GenerationSessionConfig> = {}, wait: ClaimWaitOptions = {}) {
  const r = rig();
  const claim = `c-${crypto.randomUUID()}`;
  const held = await r.memory.acquireClaim({ claimName: claim, generationId: "gen-a", ttlMs: 60_000 });
  const counted = { attempts: 0 };
  r.faults.acquireClaim = () => {
    counted.attempts++;
    return undefined;
  };
  const b = await r.open("gen-b", config);
  const stop = new AbortController();
  const waiting = b.claim(claim).waitForOwnership({ ...wait, signal: stop.signal });
  const end = async (): Promise<void> => {
    stop.abort();
    await waiting.catch(() => undefined);
    await b.close();
  };
  return { r, claim, held, counted, b, waiting, end };
}

describe("waitForOwnership polling", () => {
  it("with a live watch it does not poll at acquireIntervalMs, and a release wakes it at once", async () => {
    const w = await waitingSuccessor();
    expect(w.b.cfg.watchedAcquireIntervalMs).toBe(10_000);
    await advanceBy(w.r.clock, 5_000);
    // The first attempt only: 5 s at the rig's 10 ms acquireIntervalMs would have been ≈ 500.
    expect(w.counted.attempts).toBe(1);

    await w.r.memory.releaseClaim({ claimName: w.claim, generationId: "gen-a", token: w.held.fencingToken });
    await flushMicrotasks(50);
    const lease = await w.waiting;
    expect(lease.token).toBe(w.held.fencingToken + 1n);
    expect(w.counted.attempts).toBe(2);
    await w.end();
  });

  it("the safety poll still runs every watchedAcquireIntervalMs", async () => {
    const w = await waitingSuccessor({ watchedAcquireIntervalMs: 1_000 });
    await advanceBy(w.r.clock, 3_500);
    expect(w.counted.attempts).toBe(4);
    await w.end();
  });

  it("without a watch it polls every acquireIntervalMs", async () => {
    const w = await waitingSuccessor({ acquireIntervalMs: 100 }, { watch: false });
    await advanceBy(w.r.clock, 1_000);
    expect(w.counted.attempts).toBeGreaterThanOrEqual(9);
    await w.end();
  });

  it("watchedAcquireIntervalMs below acquireIntervalMs is refused at construction", async () => {
    await expect(rig().open("gen-b", { acquireIntervalMs: 500, watchedAcquireIntervalMs: 100 })).rejects.toMatchObject({
      code: "invalid_request",
      details: { field: "watchedAcquireIntervalMs" },
    });
  });
});
