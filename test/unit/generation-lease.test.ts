// The generation's lease (docs/protocol.md#sessions) as pure rules: keepalive epochs and
// deadlines, its end and expiry through the generation machine, and the persisted horizon's
// restart rule (never earlier than a deadline answered; a surviving channel is exact).
import { describe, expect, it } from "vitest";
import {
  deadlineAfterRestart,
  horizonAfter,
  horizonSlackMs,
  keepLease,
  leaseLive,
} from "../../src/core/generation-lease.ts";
import {
  decideEndLease,
  decideKeepalive,
  decidePatch,
  decideRegister,
  decideTouch,
} from "../../src/core/generation-machine.ts";
import type { GenerationRecord } from "../../src/protocol/generations.ts";

const T0 = 5_000_000;
const TTL = 15_000;

function registered(): GenerationRecord {
  const d = decideRegister(undefined, { id: "g", service: "s", instanceId: "i" }, T0);
  if (!d.ok) throw new Error("register refused");
  return d.record;
}

function ok(d: ReturnType<typeof decideKeepalive>): GenerationRecord {
  if (!d.ok) throw new Error(`refused ${d.refusal.code}`);
  return d.record;
}

describe("generation lease rules", () => {
  it("the first keepalive starts epoch 1 at now + ttl; later ones extend, never shorten", () => {
    const first = ok(decideKeepalive(registered(), TTL, T0));
    expect(first).toMatchObject({ leaseEpoch: 1n, leaseExpiresAtMs: T0 + TTL });
    expect(ok(decideKeepalive(first, 1_000, T0 + 10))).toMatchObject({ leaseEpoch: 1n, leaseExpiresAtMs: T0 + TTL });
    expect(ok(decideKeepalive(first, TTL, T0 + 5_000))).toMatchObject({ leaseExpiresAtMs: T0 + 5_000 + TTL });
  });

  it("live through its deadline (inclusive), expired 1 ms after", () => {
    const first = ok(decideKeepalive(registered(), TTL, T0));
    expect(leaseLive(first, T0 + TTL)).toBe(true);
    expect(leaseLive(first, T0 + TTL + 1)).toBe(false);
  });

  it("a keepalive after the deadline ends the old epoch (reported once) and starts the next", () => {
    const first = ok(decideKeepalive(registered(), TTL, T0));
    const late = decideKeepalive(first, TTL, T0 + TTL + 1);
    expect(late).toMatchObject({
      ok: true,
      record: { leaseEpoch: 2n, leaseExpiresAtMs: T0 + TTL + 1 + TTL },
      leaseEnded: { epoch: 1n, reason: "expired" },
    });
  });

  it("a read after the deadline expires the lease and reports the epoch's end", () => {
    const first = ok(decideKeepalive(registered(), TTL, T0));
    expect(decideTouch(first, T0 + TTL)).toMatchObject({ ok: true, changed: false });
    expect(decideTouch(first, T0 + TTL + 1)).toMatchObject({
      ok: true,
      changed: true,
      record: { leaseExpiresAtMs: 0, leaseEpoch: 1n },
      leaseEnded: { epoch: 1n, reason: "expired" },
    });
  });

  it("lease/end ends a live lease now; without one it changes nothing", () => {
    const first = ok(decideKeepalive(registered(), TTL, T0));
    expect(decideEndLease(first, T0 + 1)).toMatchObject({
      record: { leaseExpiresAtMs: 0 },
      leaseEnded: { epoch: 1n, reason: "ended" },
    });
    const none = decideEndLease(registered(), T0);
    expect(none).toMatchObject({ ok: true, changed: false });
    expect(none.leaseEnded).toBeUndefined();
  });

  it.each(["retired", "failed"] as const)("moving to %s ends the lease; a keepalive is then invalid_state", (state) => {
    const first = ok(decideKeepalive(registered(), TTL, T0));
    const moved = decidePatch(first, { state }, T0 + 1);
    expect(moved).toMatchObject({
      ok: true,
      record: { state, leaseExpiresAtMs: 0 },
      leaseEnded: { epoch: 1n, reason: state },
    });
    if (!moved.ok) throw new Error("refused");
    expect(decideKeepalive(moved.record, TTL, T0 + 2)).toMatchObject({ ok: false, refusal: { code: "invalid_state" } });
  });

  it("a keepalive of an unknown generation is generation_not_found", () => {
    expect(decideKeepalive(undefined, TTL, T0)).toMatchObject({ ok: false, refusal: { code: "generation_not_found" } });
  });

  it("keepLease on an expired record reports the end and starts a fresh epoch", () => {
    const first = ok(decideKeepalive(registered(), TTL, T0));
    expect(keepLease(first, TTL, T0 + 2 * TTL)).toMatchObject({ ended: { epoch: 1n }, record: { leaseEpoch: 2n } });
  });
});

describe("the persisted horizon", () => {
  it("a deadline inside the horizon writes nothing; past it the horizon moves two ttls beyond", () => {
    expect(horizonAfter(T0 + TTL, T0 + 3 * TTL, TTL)).toBeUndefined();
    expect(horizonAfter(T0 + TTL, 0, TTL)).toBe(T0 + TTL + horizonSlackMs(TTL));
    expect(horizonSlackMs(TTL)).toBe(2 * TTL);
  });

  it("keepalives every ttl/3 write about one row in seven (≤ 0.25 per keepalive)", () => {
    let horizon = 0;
    let writes = 0;
    const keepalives = 3_000;
    for (let i = 0; i < keepalives; i++) {
      const raised = horizonAfter(T0 + (i * TTL) / 3 + TTL, horizon, TTL);
      if (raised !== undefined) {
        horizon = raised;
        writes++;
      }
    }
    expect(writes / keepalives).toBeLessThanOrEqual(0.25);
    expect(writes / keepalives).toBeGreaterThan(0.1);
  });

  it("after a restart the lease is never treated as ended before a deadline it answered", () => {
    // Keepalives answered deadlines up to `answered` without writing; the horizon covers them.
    let horizon = 0;
    let stored = 0;
    let answered = 0;
    for (let i = 0; i < 40; i++) {
      answered = T0 + i * 5_000 + TTL;
      const raised = horizonAfter(answered, horizon, TTL);
      if (raised !== undefined) {
        horizon = raised;
        stored = answered;
      }
      const restarted = deadlineAfterRestart({
        storedDeadlineMs: stored,
        httpHorizonMs: horizon,
        channelHorizonMs: 0,
        liveChannelDeadlineMs: undefined,
      });
      expect(restarted).toBeGreaterThanOrEqual(answered);
      // …and never later than the stated slack beyond it.
      expect(restarted - answered).toBeLessThanOrEqual(horizonSlackMs(TTL));
    }
  });

  it("a surviving channel is exact: its channel horizon's slack does not count", () => {
    const evidence = { storedDeadlineMs: T0 + TTL, httpHorizonMs: 0, channelHorizonMs: T0 + 4 * TTL };
    expect(deadlineAfterRestart({ ...evidence, liveChannelDeadlineMs: T0 + 2 * TTL })).toBe(T0 + 2 * TTL);
    expect(deadlineAfterRestart({ ...evidence, liveChannelDeadlineMs: undefined })).toBe(T0 + 4 * TTL);
    expect(deadlineAfterRestart({ ...evidence, storedDeadlineMs: 0, liveChannelDeadlineMs: undefined })).toBe(0);
  });
});
