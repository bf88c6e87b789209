import { describe, expect, it } from "vitest";
import { type ScopeCommand, type ScopeStep, decideScope } from "../../src/core/scope-machine.ts";
import { type ScopeState, emptyScopeState, nextDeadlineMs } from "../../src/core/scope-state.ts";
import { U64_LIMIT } from "../../src/protocol/counter.ts";

const STORE = { volumeId: "vol", objectStoreId: "objects", key: "" };
const KEYED = { volumeId: "vol", objectStoreId: "", key: "world-1" };
const T0 = 1_000_000;

const acquire = (participantId: string, id: string, waitMs = 0, ttlMs = 1_000): ScopeCommand => ({
  kind: "acquire",
  participantId,
  ttlMs,
  waitMs,
  leaseId: `lease-${id}`,
  waiterId: `waiter-${id}`,
});

/** Run commands in order, threading the state; returns every step. */
function run(state: ScopeState, ...cmds: [ScopeCommand, number][]): { state: ScopeState; steps: ScopeStep[] } {
  const steps: ScopeStep[] = [];
  for (const [cmd, now] of cmds) {
    const step = decideScope(state, cmd, now);
    steps.push(step);
    state = step.next;
  }
  return { state, steps };
}

const last = (steps: ScopeStep[]): ScopeStep => steps[steps.length - 1]!;

describe("coord machine: grants", () => {
  it("grants a free scope at once with epoch 1 and emits nothing", () => {
    const step = decideScope(emptyScopeState(STORE), acquire("a", "1"), T0);
    expect(step.result).toEqual({
      ok: true,
      kind: "granted",
      lease: { leaseId: "lease-1", epoch: 1n, participantId: "a", expiresAtMs: T0 + 1_000 },
    });
    expect(step.changed).toBe(true);
    expect(step.events).toEqual([]);
    expect(nextDeadlineMs(step.next)).toBe(T0 + 1_001);
  });

  it("refuses a try on a held scope with lease_held and one wantLock event, even for the holder", () => {
    const { steps } = run(emptyScopeState(STORE), [acquire("a", "1"), T0], [acquire("a", "2"), T0 + 1]);
    const step = last(steps);
    // The refusal names the holding participant.
    expect(step.result).toEqual({ ok: false, refusal: { code: "lease_held", details: { holder: "a" } } });
    expect(step.events).toEqual([expect.objectContaining({ processId: "a", wantLock: true, unlocked: false })]);
    expect(step.changed).toBe(false);
  });

  it("epoch is +1 on every grant and never reused across release and re-acquire", () => {
    const { steps } = run(
      emptyScopeState(STORE),
      [acquire("a", "1"), T0],
      [{ kind: "release", leaseId: "lease-1" }, T0 + 1],
      [acquire("a", "2"), T0 + 2],
      [{ kind: "release", leaseId: "lease-2" }, T0 + 3],
      [acquire("b", "3"), T0 + 4],
    );
    const epochs = steps.flatMap((s) => (s.result.ok && s.result.kind === "granted" ? [s.result.lease.epoch] : []));
    expect(epochs).toEqual([1n, 2n, 3n]);
  });
});

describe("coord machine: waiting", () => {
  it("queues waiters first-come first-served and hands over on release", () => {
    const { state, steps } = run(
      emptyScopeState(STORE),
      [acquire("a", "1"), T0],
      [acquire("b", "2", 5_000), T0 + 10],
      [acquire("c", "3", 5_000), T0 + 20],
      [{ kind: "release", leaseId: "lease-1" }, T0 + 30],
    );
    expect(steps[1]!.result).toEqual({ ok: true, kind: "queued", waiterId: "waiter-2" });
    expect(steps[1]!.events).toEqual([expect.objectContaining({ processId: "b", wantLock: true })]);
    const release = last(steps);
    expect(release.result).toEqual({ ok: true, kind: "released", released: true });
    expect(release.events).toEqual([expect.objectContaining({ processId: "a", unlocked: true })]);
    expect(release.events[0]).not.toHaveProperty("expired");
    expect(release.granted).toEqual([
      { waiterId: "waiter-2", lease: { leaseId: "lease-2", epoch: 2n, participantId: "b", expiresAtMs: T0 + 1_030 } },
    ]);
    expect(state.waiters.map((w) => w.waiterId)).toEqual(["waiter-3"]);
    // A new try does not overtake the queue.
    const overtaking = decideScope(state, { kind: "release", leaseId: "lease-2" }, T0 + 40);
    expect(overtaking.granted.map((g) => g.waiterId)).toEqual(["waiter-3"]);
  });

  it("times a waiter out when waitMs passes (at the deadline, not before)", () => {
    const { state } = run(
      emptyScopeState(STORE),
      [acquire("a", "1", 0, 10_000), T0],
      [acquire("b", "2", 500), T0 + 100],
    );
    expect(nextDeadlineMs(state)).toBe(T0 + 600);
    const before = decideScope(state, { kind: "expire" }, T0 + 599);
    expect(before.timedOut).toEqual([]);
    const at = decideScope(state, { kind: "expire" }, T0 + 600);
    expect(at.timedOut).toEqual(["waiter-2"]);
    expect(at.next.waiters).toEqual([]);
    expect(at.next.holder?.leaseId).toBe("lease-1");
  });

  it("cancelWait removes a queued waiter; a cancelled grant is released and passed on", () => {
    const { state } = run(
      emptyScopeState(STORE),
      [acquire("a", "1"), T0],
      [acquire("b", "2", 5_000), T0],
      [acquire("c", "3", 5_000), T0],
    );
    const dequeued = decideScope(state, { kind: "cancelWait", waiterId: "waiter-2" }, T0 + 1);
    expect(dequeued.result).toEqual({ ok: true, kind: "cancelled", outcome: "dequeued" });
    expect(dequeued.next.waiters.map((w) => w.waiterId)).toEqual(["waiter-3"]);

    const handed = decideScope(dequeued.next, { kind: "release", leaseId: "lease-1" }, T0 + 2);
    expect(handed.granted.map((g) => g.waiterId)).toEqual(["waiter-3"]);
    // waiter-3's caller left before the grant reached it: give the lease back.
    const back = decideScope(handed.next, { kind: "cancelWait", waiterId: "waiter-3" }, T0 + 3);
    expect(back.result).toEqual({ ok: true, kind: "cancelled", outcome: "released" });
    expect(back.next.holder).toBeNull();
    expect(back.events).toEqual([expect.objectContaining({ processId: "c", unlocked: true })]);
    expect(decideScope(back.next, { kind: "cancelWait", waiterId: "waiter-3" }, T0 + 4).result).toEqual({
      ok: true,
      kind: "cancelled",
      outcome: "none",
    });
  });
});

describe("coord machine: expiry", () => {
  it("expires strictly after expiresAtMs like a release, with expired:true, and grants the next waiter", () => {
    const { state } = run(emptyScopeState(STORE), [acquire("a", "1", 0, 1_000), T0], [acquire("b", "2", 60_000), T0]);
    const at = decideScope(state, { kind: "expire" }, T0 + 1_000);
    expect(at.events).toEqual([]);
    expect(at.next.holder?.leaseId).toBe("lease-1");

    const after = decideScope(state, { kind: "expire" }, T0 + 1_001);
    expect(after.events).toEqual([
      expect.objectContaining({ processId: "a", unlocked: true, expired: true, generation: 0n }),
    ]);
    expect(after.granted).toEqual([
      { waiterId: "waiter-2", lease: { leaseId: "lease-2", epoch: 2n, participantId: "b", expiresAtMs: T0 + 2_001 } },
    ]);
    expect(after.changed).toBe(true);
  });

  it("applies expiry lazily on any command, even one that then fails", () => {
    const { state } = run(emptyScopeState(STORE), [acquire("a", "1", 0, 1_000), T0]);
    const step = decideScope(state, { kind: "keepalive", leaseId: "lease-1" }, T0 + 5_000);
    expect(step.result).toEqual({ ok: false, refusal: { code: "lease_lost" } });
    expect(step.events).toEqual([expect.objectContaining({ unlocked: true, expired: true })]);
    expect(step.next.holder).toBeNull();
  });

  it("a late tick gives the lease to a waiter that was still waiting when the lease expired", () => {
    // Lease expires at T0+1001; b waits until T0+1500. The tick only runs at T0+2000.
    const { state } = run(emptyScopeState(STORE), [acquire("a", "1", 0, 1_000), T0], [acquire("b", "2", 1_500), T0]);
    const late = decideScope(state, { kind: "expire" }, T0 + 2_000);
    expect(late.granted.map((g) => g.waiterId)).toEqual(["waiter-2"]);
    expect(late.timedOut).toEqual([]);
  });

  it("a waiter whose deadline passed before the expiry instant is timed out, not granted", () => {
    const { state } = run(emptyScopeState(STORE), [acquire("a", "1", 0, 1_000), T0], [acquire("b", "2", 900), T0]);
    const late = decideScope(state, { kind: "expire" }, T0 + 2_000);
    expect(late.granted).toEqual([]);
    expect(late.timedOut).toEqual(["waiter-2"]);
    expect(late.next.holder).toBeNull();
  });
});

describe("coord machine: keepalive", () => {
  it("extends from now with the lease's ttl (or a new one) and reports waiters as wantLock", () => {
    const { state } = run(emptyScopeState(STORE), [acquire("a", "1", 0, 1_000), T0]);
    const k1 = decideScope(state, { kind: "keepalive", leaseId: "lease-1" }, T0 + 500);
    expect(k1.result).toEqual({
      ok: true,
      kind: "keepalive",
      wantLock: false,
      lease: { leaseId: "lease-1", epoch: 1n, participantId: "a", expiresAtMs: T0 + 1_500 },
    });
    const queued = decideScope(k1.next, acquire("b", "2", 10_000), T0 + 600);
    const k2 = decideScope(queued.next, { kind: "keepalive", leaseId: "lease-1", ttlMs: 3_000 }, T0 + 700);
    expect(k2.result).toMatchObject({ ok: true, wantLock: true, lease: { expiresAtMs: T0 + 3_700 } });
    const k3 = decideScope(k2.next, { kind: "keepalive", leaseId: "lease-1" }, T0 + 800);
    expect(k3.result).toMatchObject({ lease: { expiresAtMs: T0 + 3_800 } });
  });

  it("refuses an unknown or released lease with lease_lost", () => {
    const { state } = run(
      emptyScopeState(STORE),
      [acquire("a", "1"), T0],
      [{ kind: "release", leaseId: "lease-1" }, T0],
    );
    expect(decideScope(state, { kind: "keepalive", leaseId: "lease-1" }, T0).result).toMatchObject({
      refusal: { code: "lease_lost" },
    });
    expect(decideScope(state, { kind: "refresh", leaseId: "nope" }, T0).result).toMatchObject({
      refusal: { code: "lease_lost" },
    });
  });
});

describe("coord machine: publish", () => {
  const held = (): ScopeState => run(emptyScopeState(STORE), [acquire("w", "1", 0, 60_000), T0]).state;

  it("advances the generation by one, stores root and prefix, and emits the publish event", () => {
    const step = decideScope(
      held(),
      { kind: "publish", leaseId: "lease-1", root: { value: { bucketId: "b" } }, keyPrefixChanged: "d29ybGQ=" },
      T0 + 1,
    );
    expect(step.result).toEqual({
      ok: true,
      kind: "snapshot",
      snapshot: { volumeId: "vol", objectStoreId: "objects", generation: 1n, root: { bucketId: "b" } },
    });
    expect(step.events).toEqual([
      {
        processId: "w",
        volumeId: "vol",
        objectStoreId: "objects",
        generation: 1n,
        wantLock: false,
        unlocked: false,
        rootChanged: { bucketId: "b" },
        keyPrefixChanged: "d29ybGQ=",
        fallbackReason: "",
      },
    ]);
    expect(step.published?.previousGeneration).toBe(0n);
    expect(step.next.lastKeyPrefix).toBe("d29ybGQ=");
    expect(step.next.holder?.leaseId).toBe("lease-1");
  });

  it("jumps to a larger given generation, bumps a smaller or equal one, keeps root when absent", () => {
    const { state, steps } = run(
      held(),
      [{ kind: "publish", leaseId: "lease-1", generation: 10n, root: { value: "r1" } }, T0],
      [{ kind: "publish", leaseId: "lease-1", generation: 3n }, T0],
      [{ kind: "publish", leaseId: "lease-1", generation: 12n, root: { value: null } }, T0],
    );
    expect(
      steps.map((s) => (s.result.ok && s.result.kind === "snapshot" ? s.result.snapshot.generation : -1n)),
    ).toEqual([10n, 11n, 12n]);
    expect(steps[1]!.next.root).toBe("r1");
    expect(steps[1]!.events[0]!.rootChanged).toBeNull();
    expect(state.root).toBeNull();
    expect(state.lastKeyPrefix).toBe("");
  });

  it("refuses a CAS mismatch with stale_generation and changes nothing", () => {
    const first = decideScope(held(), { kind: "publish", leaseId: "lease-1" }, T0);
    const stale = decideScope(first.next, { kind: "publish", leaseId: "lease-1", expectedGeneration: 0n }, T0);
    expect(stale.result).toMatchObject({
      ok: false,
      refusal: { code: "stale_generation", details: { generation: "1" } },
    });
    expect(stale.changed).toBe(false);
    expect(stale.events).toEqual([]);
    const ok = decideScope(first.next, { kind: "publish", leaseId: "lease-1", expectedGeneration: 1n }, T0);
    expect(ok.next.generation).toBe(2n);
  });

  it("refuses a non-holder with lease_lost, and the generation cannot pass 2^64-1", () => {
    expect(decideScope(held(), { kind: "publish", leaseId: "other" }, T0).result).toMatchObject({
      refusal: { code: "lease_lost" },
    });
    const top = decideScope(held(), { kind: "publish", leaseId: "lease-1", generation: U64_LIMIT }, T0);
    expect(top.next.generation).toBe(U64_LIMIT);
    expect(decideScope(top.next, { kind: "publish", leaseId: "lease-1" }, T0).result).toMatchObject({
      refusal: { code: "invalid_request" },
    });
  });
});

describe("coord machine: release, keyed scopes, capability", () => {
  it("release is idempotent: an unknown or second release succeeds without an event", () => {
    const { steps } = run(
      emptyScopeState(STORE),
      [acquire("a", "1"), T0],
      [{ kind: "release", leaseId: "lease-1" }, T0],
      [{ kind: "release", leaseId: "lease-1" }, T0],
      [{ kind: "release", leaseId: "never" }, T0],
    );
    expect(steps.slice(1).map((s) => s.result)).toEqual([
      { ok: true, kind: "released", released: true },
      { ok: true, kind: "released", released: false },
      { ok: true, kind: "released", released: false },
    ]);
    expect(steps[2]!.events).toEqual([]);
  });

  it("keyed scopes lease normally but refuse snapshot, refresh and publish with unsupported", () => {
    const { state } = run(emptyScopeState(KEYED), [acquire("a", "1"), T0]);
    expect(state.holder?.epoch).toBe(1n);
    for (const cmd of [
      { kind: "snapshot" },
      { kind: "refresh", leaseId: "lease-1" },
      { kind: "publish", leaseId: "lease-1" },
    ] as ScopeCommand[]) {
      expect(decideScope(state, cmd, T0).result).toMatchObject({ ok: false, refusal: { code: "unsupported" } });
    }
  });

  it("capability reports generations only for object-store scopes", () => {
    expect(decideScope(emptyScopeState(KEYED), { kind: "capability" }, T0).result).toEqual({
      ok: true,
      kind: "capability",
      capability: {
        supported: true,
        backend: "durable-object",
        volumeId: "vol",
        objectStoreId: "",
        generation: 0n,
        generations: false,
        detectsLoss: true,
        fallbackReason: "",
      },
    });
    const store = { ...emptyScopeState(STORE), generation: 7n };
    expect(decideScope(store, { kind: "capability" }, T0).result).toMatchObject({
      capability: { generations: true, generation: 7n, objectStoreId: "objects" },
    });
  });

  it("nextDeadlineMs is the earliest of lease expiry (+1) and waiter deadlines", () => {
    expect(nextDeadlineMs(emptyScopeState(STORE))).toBeUndefined();
    const { state } = run(emptyScopeState(STORE), [acquire("a", "1", 0, 10_000), T0], [acquire("b", "2", 300), T0]);
    expect(nextDeadlineMs(state)).toBe(T0 + 300);
  });
});
