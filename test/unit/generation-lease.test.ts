// The generation's lease (docs/protocol.md#sessions) as pure rules: keepalive epochs and
// deadlines, its end and expiry through the generation machine, the unwritten promises and
// the restart rule (never earlier than a deadline answered; surviving channels are exact),
// and when the alarm looks at a live lease.
import { describe, expect, it } from "vitest";
import {
  DEFAULT_LEASE_NOTICE_TTLS,
  MAX_LEASE_NOTICE_TTLS,
  deadlineAfterRestart,
  keepLease,
  leaseLive,
  leaseNoticeTtls,
  noticeAtMs,
  promiseAfter,
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

describe("unwritten promises and the restart rule", () => {
  it("a keepalive whose ttl the persisted promise covers writes nothing; a longer ttl writes once", () => {
    expect(promiseAfter(TTL, TTL)).toBeUndefined();
    expect(promiseAfter(TTL, TTL - 1)).toBeUndefined();
    expect(promiseAfter(0, TTL)).toBe(TTL);
    expect(promiseAfter(TTL, 2 * TTL)).toBe(2 * TTL);
  });

  it("keepalives of one ttl every ttl/3 write once in all (far under 0.25 rows per keepalive)", () => {
    let persisted = 0;
    let writes = 0;
    for (let i = 0; i < 3_000; i++) {
      const raised = promiseAfter(persisted, TTL);
      if (raised !== undefined) [persisted, writes] = [raised, writes + 1];
    }
    expect(writes).toBe(1);
  });

  it("after a restart the lease is never ended before a deadline it answered, and exceeds the last by at most the wait for the first read", () => {
    // Keepalives every 5 s answered deadlines without writing (the promise ttl covers them).
    const promises = { httpTtlMs: TTL, channelTtlMs: 0 };
    const stored = T0 + TTL;
    for (const lastAnsweredAtMs of [T0, T0 + 5_000, T0 + 60_000]) {
      const answered = lastAnsweredAtMs + TTL;
      // The fresh instance's first read comes at the restart or later (its alarm, a request).
      for (const firstReadMs of [lastAnsweredAtMs, lastAnsweredAtMs + 1, lastAnsweredAtMs + 2 * TTL]) {
        const fold = deadlineAfterRestart({
          storedDeadlineMs: stored,
          promises,
          liveChannelDeadlineMs: undefined,
          nowMs: firstReadMs,
        });
        expect(fold.deadlineMs).toBeGreaterThanOrEqual(answered);
        expect(fold.deadlineMs - answered).toBeLessThanOrEqual(Math.max(0, firstReadMs - lastAnsweredAtMs));
        // The fold is written and its promise cleared: a second restart does not extend again.
        expect(fold.write).toEqual({ httpTtlMs: 0, channelTtlMs: 0 });
        const again = deadlineAfterRestart({
          storedDeadlineMs: fold.deadlineMs,
          promises: fold.write!,
          liveChannelDeadlineMs: undefined,
          nowMs: firstReadMs + 10 * TTL,
        });
        expect(again).toEqual({ deadlineMs: fold.deadlineMs });
      }
    }
  });

  it("surviving channels are exact: their promise ttl does not count, and stays for a later restart", () => {
    const evidence = {
      storedDeadlineMs: T0 + TTL,
      promises: { httpTtlMs: 0, channelTtlMs: TTL },
      nowMs: T0 + 2 * TTL,
    };
    expect(deadlineAfterRestart({ ...evidence, liveChannelDeadlineMs: T0 + 2 * TTL + 500 })).toEqual({
      deadlineMs: T0 + 2 * TTL + 500,
    });
    // No channel survived (a restart): every ping was before now, so it ends by now + ttl.
    expect(deadlineAfterRestart({ ...evidence, liveChannelDeadlineMs: undefined })).toEqual({
      deadlineMs: T0 + 3 * TTL,
      write: { httpTtlMs: 0, channelTtlMs: 0 },
    });
    expect(deadlineAfterRestart({ ...evidence, storedDeadlineMs: 0, liveChannelDeadlineMs: undefined })).toEqual({
      deadlineMs: 0,
    });
  });

  it("the alarm looks at a live lease at its deadline, or the deployment's notice grace after it", () => {
    expect(DEFAULT_LEASE_NOTICE_TTLS).toBe(0);
    expect(noticeAtMs(T0, TTL)).toBe(T0 + 1);
    expect(noticeAtMs(T0, TTL, 2)).toBe(T0 + 2 * TTL + 1);
    expect([undefined, "", "2", "3", "4", "-1", "1.5", "x"].map(leaseNoticeTtls)).toEqual([0, 0, 2, 3, 0, 0, 0, 0]);
    expect(MAX_LEASE_NOTICE_TTLS).toBe(3);
  });
});
