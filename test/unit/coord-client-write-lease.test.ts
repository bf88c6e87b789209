// WriteLease keepalive and loss detection, driven by a ManualClock and a scripted driver:
// every instant below is exact, nothing sleeps.
import { describe, expect, it } from "vitest";
import { ManualClock, flushMicrotasks } from "../../src/core/clock.ts";
import { ShiftlockError, hasCode } from "../../src/protocol/errors.ts";
import { checkScope } from "../../src/client/coord/coord-scope.ts";
import type { Snapshot } from "../../src/client/coord/coord-types.ts";
import { HeldWriteLease, type LeaseDriver } from "../../src/client/coord/write-lease.ts";

const START = 1_000_000;
const TTL = 900; // keepalive every 300 ms; default margin 90 ms

type Answer = "ok" | "lost" | "network" | "hang" | { wantLock: boolean };

interface Script {
  driver: LeaseDriver;
  keepalives: { atMs: number; signal: AbortSignal }[];
  releases: { atMs: number; signal: AbortSignal; abortedAtCall: boolean }[];
  /** Answers to the next keepalives (then `fallback`). */
  answers: Answer[];
  fallback: Answer;
  releaseAnswer: "ok" | "hang" | "network";
  refreshes: number;
}

function script(clock: ManualClock): Script {
  const snapshot: Snapshot = { volumeId: "v", objectStoreId: "o", generation: 0n, root: null };
  const s: Script = {
    keepalives: [],
    releases: [],
    answers: [],
    fallback: "ok",
    releaseAnswer: "ok",
    refreshes: 0,
    driver: {
      keepalive: (ttlMs, signal) => {
        s.keepalives.push({ atMs: clock.nowMs(), signal });
        const answer = s.answers.shift() ?? s.fallback;
        if (answer === "hang") return new Promise(() => {});
        if (answer === "lost") return Promise.reject(new ShiftlockError("lease_lost"));
        if (answer === "network") return Promise.reject(new ShiftlockError("internal", "network", { network: true }));
        const wantLock = typeof answer === "object" ? answer.wantLock : false;
        const lease = { leaseId: "L", epoch: 7n, participantId: "p", expiresAtMs: clock.nowMs() + ttlMs };
        return Promise.resolve({ lease, wantLock });
      },
      refresh: () => {
        s.refreshes++;
        return Promise.resolve(snapshot);
      },
      publish: () => Promise.reject(new ShiftlockError("lease_lost")),
      release: (signal) => {
        s.releases.push({ atMs: clock.nowMs(), signal, abortedAtCall: signal.aborted });
        if (s.releaseAnswer === "hang") return new Promise(() => {});
        if (s.releaseAnswer === "network")
          return Promise.reject(new ShiftlockError("internal", "down", { network: true }));
        return Promise.resolve();
      },
    },
  };
  return s;
}

function setup(opts: { keyed?: boolean; onWantLock?: () => void; releaseTimeoutMs?: number } = {}) {
  const clock = new ManualClock(START);
  const s = script(clock);
  const scope = checkScope({
    volumeId: "v",
    objectStoreId: "o",
    ...(opts.keyed === true ? { key: "k" } : {}),
    participantId: "p",
  });
  const lease = new HeldWriteLease({
    namespace: "ns",
    scope,
    grant: { leaseId: "L", epoch: 7n, participantId: "p", expiresAtMs: START + TTL },
    ttlMs: TTL,
    requestedAtMs: START,
    driver: s.driver,
    clock,
    onWantLock: opts.onWantLock,
    releaseTimeoutMs: opts.releaseTimeoutMs,
  });
  return { clock, s, lease };
}

/** Advance in 1 ms steps, recording the instant `done` settled. */
async function advanceWatching(clock: ManualClock, lease: HeldWriteLease, ms: number): Promise<number | undefined> {
  let doneAt: number | undefined;
  void lease.done.then(() => (doneAt ??= clock.nowMs()));
  for (let i = 0; i < ms && doneAt === undefined; i++) await clock.advance(1);
  await flushMicrotasks();
  return doneAt;
}

describe("WriteLease keepalive", () => {
  it("sends a keepalive every ttl/3 and stays held", async () => {
    const { clock, s, lease } = setup();
    await clock.advance(TTL * 4);
    expect(s.keepalives.map((k) => k.atMs - START)).toEqual([
      300, 600, 900, 1200, 1500, 1800, 2100, 2400, 2700, 3000, 3300, 3600,
    ]);
    expect(lease.err).toBeUndefined();
    expect(lease.signal.aborted).toBe(false);
    expect(lease.localDeadlineMs).toBe(START + 3600 + TTL - 90);
    await lease.release();
  });

  it("a refused keepalive (410) is a loss at that instant", async () => {
    const { clock, s, lease } = setup();
    s.answers = ["ok", "lost"];
    const doneAt = await advanceWatching(clock, lease, TTL * 2);
    expect(doneAt).toBe(START + 600);
    expect(hasCode(lease.err, "lease_lost")).toBe(true);
    expect(lease.signal.aborted).toBe(true);
    expect(lease.signal.reason).toBe(lease.err);
    // No keepalive after the loss.
    await clock.advance(TTL * 3);
    expect(s.keepalives).toHaveLength(2);
  });

  it("failing keepalives are retried, and the loss is declared before the server could expire the lease", async () => {
    const { clock, s, lease } = setup();
    s.fallback = "network";
    const doneAt = await advanceWatching(clock, lease, TTL * 2);
    // Deadline = acquire send time + ttl − margin: strictly before the server's expiry.
    expect(doneAt).toBe(START + TTL - 90);
    expect(doneAt!).toBeLessThan(START + TTL);
    expect(s.keepalives.length).toBeGreaterThan(2); // retried, not given up after one failure
    expect(hasCode(lease.err, "lease_lost")).toBe(true);
    expect(lease.err?.message).toMatch(/no keepalive succeeded/);
  });

  it("a hanging keepalive is abandoned at the deadline and its request aborted", async () => {
    const { clock, s, lease } = setup();
    s.fallback = "hang";
    const doneAt = await advanceWatching(clock, lease, TTL * 2);
    expect(doneAt).toBe(START + TTL - 90);
    expect(s.keepalives).toHaveLength(1);
    expect(s.keepalives[0]!.signal.aborted).toBe(true);
  });

  it("the deadline moves with each keepalive's send time, not its answer time", async () => {
    const { clock, s, lease } = setup();
    s.answers = ["ok"];
    s.fallback = "network";
    const doneAt = await advanceWatching(clock, lease, TTL * 3);
    expect(doneAt).toBe(START + 300 + TTL - 90);
  });

  it("surfaces wantLock from the keepalive answer", async () => {
    let heard = 0;
    const { clock, s, lease } = setup({ onWantLock: () => heard++ });
    s.answers = ["ok", { wantLock: true }, "ok"];
    await clock.advance(300);
    expect(lease.wantLock).toBe(false);
    await clock.advance(300);
    expect(lease.wantLock).toBe(true);
    expect(heard).toBe(1);
    await clock.advance(300);
    expect(lease.wantLock).toBe(false);
    expect(heard).toBe(1);
    await lease.release();
  });
});

describe("WriteLease release", () => {
  it("is idempotent, ignores an aborted signal, and leaves err undefined", async () => {
    const { s, lease } = setup();
    const first = lease.release({ signal: AbortSignal.abort() });
    const second = lease.release();
    expect(second).toBe(first);
    await first;
    expect(s.releases).toHaveLength(1);
    expect(s.releases[0]!.abortedAtCall).toBe(false);
    await lease.done;
    expect(lease.signal.aborted).toBe(true);
    expect(lease.err).toBeUndefined();
    await expect(lease.refresh()).rejects.toSatisfy((e) => hasCode(e, "lease_lost"));
    await expect(lease.publish({})).rejects.toSatisfy((e) => hasCode(e, "lease_lost"));
    expect(s.refreshes).toBe(0);
  });

  it("stops the keepalive loop", async () => {
    const { clock, s, lease } = setup();
    await lease.release();
    await clock.advance(TTL * 3);
    expect(s.keepalives).toHaveLength(0);
  });

  it("retries a failing DELETE and gives up after its own timeout, still firing done", async () => {
    const { clock, s, lease } = setup({ releaseTimeoutMs: 2_000 });
    s.releaseAnswer = "network";
    const outcome = lease.release().then(
      () => "resolved",
      (e: unknown) => e,
    );
    for (let i = 0; i < 200; i++) await clock.advance(10);
    const err = await outcome;
    expect(err).toBeInstanceOf(ShiftlockError);
    expect(s.releases.length).toBeGreaterThan(1);
    await lease.done;
    expect(lease.err).toBe(err);
  });

  it("a hanging DELETE is bounded by the release timeout", async () => {
    const { clock, s, lease } = setup({ releaseTimeoutMs: 1_000 });
    s.releaseAnswer = "hang";
    const outcome = lease.release().then(
      () => "resolved",
      () => "rejected",
    );
    await clock.advance(999);
    expect(await Promise.race([outcome, Promise.resolve("pending")])).toBe("pending");
    await clock.advance(1);
    expect(await outcome).toBe("rejected");
    expect(s.releases[0]!.signal.aborted).toBe(true);
  });

  it("after a refused keepalive, release resolves at once without a request", async () => {
    const { clock, s, lease } = setup();
    s.fallback = "lost";
    await advanceWatching(clock, lease, TTL);
    await lease.release();
    expect(s.releases).toHaveLength(0);
    expect(hasCode(lease.err, "lease_lost")).toBe(true);
  });

  it("after a deadline loss, release resolves at once and frees the server side best-effort", async () => {
    const { clock, s, lease } = setup();
    s.fallback = "network";
    await advanceWatching(clock, lease, TTL);
    await lease.release();
    await flushMicrotasks();
    expect(s.releases).toHaveLength(1);
  });

  it("await using releases at the end of the block", async () => {
    const { s, lease } = setup();
    {
      await using held = lease;
      expect(held.epoch).toBe(7n);
    }
    expect(s.releases).toHaveLength(1);
    expect(lease.signal.aborted).toBe(true);
  });
});

describe("WriteLease refresh and publish", () => {
  it("a lease_lost answer to publish declares the loss", async () => {
    const { lease } = setup();
    await expect(lease.publish({ root: 1 })).rejects.toSatisfy((e) => hasCode(e, "lease_lost"));
    expect(lease.signal.aborted).toBe(true);
    expect(hasCode(lease.err, "lease_lost")).toBe(true);
  });

  it("keyed scopes refuse refresh and publish with unsupported, before anything else", async () => {
    const { s, lease } = setup({ keyed: true });
    await expect(lease.refresh()).rejects.toSatisfy((e) => hasCode(e, "unsupported"));
    await lease.release();
    await expect(lease.publish({})).rejects.toSatisfy((e) => hasCode(e, "unsupported"));
    expect(s.refreshes).toBe(0);
  });

  it("an aborted caller signal rejects before any request", async () => {
    const { s, lease } = setup();
    await expect(lease.refresh({ signal: AbortSignal.abort(new Error("gone")) })).rejects.toThrow("gone");
    expect(s.refreshes).toBe(0);
    await lease.release();
  });
});
