// DrainGroup (Go reference TestDrainGroup, plus what Go got wrong: reopening, §5.14) and
// closing a session while an acquire is in flight (TestAcquireThenCloseReleasesBackend).
import { describe, expect, it } from "vitest";
import { DrainGroup } from "../../src/client/handoff/index.ts";
import { ManualClock } from "../../src/core/clock.ts";
import { hasCode } from "../../src/protocol/errors.ts";
import { flushMicrotasks, rig } from "./handoff-fixtures.ts";

describe("DrainGroup", () => {
  it("refuses new work while draining, waits for work in flight, and reopens", async () => {
    const clock = new ManualClock();
    const group = new DrainGroup();
    const end = group.begin();
    group.startDrain();
    expect(() => group.begin()).toThrow(expect.objectContaining({ code: "invalid_state" }) as Error);
    expect(group.tryBegin()).toBeUndefined();
    let done = false;
    const waiting = group.wait(clock, 1_000).then(() => (done = true));
    await clock.advance(500);
    expect(done).toBe(false);
    end();
    end(); // idempotent: no under-count
    await waiting;
    expect(group.active).toBe(0);
    group.reopen();
    group.begin()();
    expect(group.active).toBe(0);
  });

  it("times out on the injected clock with drain_timeout", async () => {
    const clock = new ManualClock();
    const group = new DrainGroup();
    group.begin();
    const failing = group.wait(clock, 1_000).catch((e: unknown) => e);
    await clock.advance(1_000);
    const err = await failing;
    expect(hasCode(err, "invalid_state") && err.details["reason"] === "drain_timeout").toBe(true);
  });

  it("run() counts its work and ends it even when the work throws", async () => {
    const group = new DrainGroup();
    await expect(group.run(() => Promise.reject(new Error("boom")))).rejects.toThrow("boom");
    expect(group.active).toBe(0);
    group.close();
    expect(() => group.begin()).toThrow(expect.objectContaining({ code: "invalid_state" }) as Error);
  });
});

describe("close while acquiring", () => {
  it.each([
    ["unbound: the late acquire is released", { bound: false }],
    ["bound: retiring ended the lease, so the late acquire is refused", {}],
  ] as const)("the waiter gets closed and the acquire that lands afterwards holds nothing (%s)", async (_, extra) => {
    const r = rig();
    const claim = `racy-${crypto.randomUUID()}`;
    const a = await r.open("gen-a", extra);
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    r.faults.acquireClaim = (_args, call) => gate.then(call);
    const waiting = a
      .claim(claim)
      .waitForOwnership()
      .catch((e: unknown) => e);
    await flushMicrotasks();
    await a.close();
    const err = await waiting;
    expect(hasCode(err, "invalid_state") && err.details["reason"] === "closed").toBe(true);
    open();
    await flushMicrotasks(100);
    if (a.cfg.bound) {
      await expect(r.backend.getClaim(claim)).rejects.toSatisfy((e) => hasCode(e, "claim_not_found"));
    } else {
      expect((await r.backend.getClaim(claim)).phase).toBe("unowned");
    }
  });
});
