// The generation session: config validation, registration, acquiring, renewing, losing
// and releasing claims (ports of the Go reference's root-package tests, §4.5).
import { describe, expect, it } from "vitest";
import { GenerationSession } from "../../src/client/handoff/index.ts";
import { MemoryClaimsBackend } from "../../src/client/claims/memory-claims-backend.ts";
import { ManualClock } from "../../src/core/clock.ts";
import { hasCode, ShiftlockError } from "../../src/protocol/errors.ts";
import { advanceBy, flushMicrotasks, networkError, rig } from "./handoff-fixtures.ts";

const name = (): string => `claim-${crypto.randomUUID()}`;

describe("config", () => {
  const clock = new ManualClock(5_000);
  const backend = new MemoryClaimsBackend({ clock });
  const field = (fn: () => unknown): unknown => {
    try {
      fn();
    } catch (err) {
      expect(hasCode(err, "invalid_request")).toBe(true);
      return (err as ShiftlockError).details["field"];
    }
    throw new Error("expected invalid_request");
  };

  it("rejects missing service, instance and backend, in that order", () => {
    expect(field(() => new GenerationSession({ service: "", instanceId: "", backend }))).toBe("service");
    expect(field(() => new GenerationSession({ service: "s", instanceId: "", backend }))).toBe("instanceId");
    expect(
      field(() => new GenerationSession({ service: "s", instanceId: "i", backend: undefined as unknown as never })),
    ).toBe("backend");
  });

  it("rejects a ttl out of range and a renew interval that leaves no room before the loss margin", () => {
    expect(field(() => new GenerationSession({ service: "s", instanceId: "i", backend, leaseTtlMs: 99 }))).toBe(
      "leaseTtlMs",
    );
    expect(
      field(
        () =>
          new GenerationSession({ service: "s", instanceId: "i", backend, leaseTtlMs: 1_000, renewIntervalMs: 1_000 }),
      ),
    ).toBe("renewIntervalMs");
  });

  it("applies the documented defaults", () => {
    const s = new GenerationSession({ service: "svc", instanceId: "pod-1", backend, clock });
    expect(s.cfg).toMatchObject({
      leaseTtlMs: 15_000,
      renewIntervalMs: 5_000,
      acquireIntervalMs: 500,
      transferTimeoutMs: 30_000,
      drainTimeoutMs: 30_000,
      generationId: "svc-pod-1-5000",
    });
    expect(s.cfg.renewIntervalMs).toBeLessThan(s.cfg.leaseTtlMs);
  });
});

describe("registration and ownership", () => {
  it("registers joining → standby, and the first acquire makes the generation active", async () => {
    const r = rig();
    const a = await r.open(`gen-${crypto.randomUUID()}`);
    expect(a.state).toBe("standby");
    expect((await r.backend.getGeneration(a.generationId)).state).toBe("standby");
    await a.claim(name()).tryAcquire();
    await a.flush();
    expect(a.state).toBe("active");
    expect((await r.backend.getGeneration(a.generationId)).state).toBe("active");
    await a.close();
  });

  it("one owner: a second generation is refused while the first holds the claim", async () => {
    const r = rig();
    const claim = name();
    const a = await r.open("gen-a");
    const lease = await a.claim(claim).waitForOwnership();
    expect(lease.token).toBe(1n);
    await expect(r.backend.acquireClaim({ claimName: claim, generationId: "gen-b", ttlMs: 1_000 })).rejects.toSatisfy(
      (e) => hasCode(e, "claim_held"),
    );
    expect((await r.backend.getClaim(claim)).ownerGeneration).toBe("gen-a");
    await a.close();
  });

  it("a stale owner cannot release a newer owner's claim, and tokens never decrease", async () => {
    const r = rig();
    const claim = name();
    const a = await r.open("gen-a");
    const b = await r.open("gen-b");
    const old = await a.claim(claim).tryAcquire();
    await old.release();
    const next = await b.claim(claim).tryAcquire();
    expect(next.token).toBeGreaterThan(old.token);
    await old.release(); // a no-op: the lease already ended
    await expect(
      r.backend.releaseClaim({ claimName: claim, generationId: "gen-a", token: old.token }),
    ).rejects.toSatisfy((e) => hasCode(e, "stale_token"));
    expect((await r.backend.getClaim(claim)).ownerGeneration).toBe("gen-b");
    let last = next.token;
    for (let i = 0; i < 6; i++) {
      const s = i % 2 === 0 ? a : b;
      await (s === a ? b : a).claim(claim).release();
      const l = await s.claim(claim).tryAcquire();
      expect(l.token).toBeGreaterThan(last);
      last = l.token;
    }
    await a.close();
    await b.close();
  });

  it("waitForOwnership waits while another generation holds the claim and wakes when it is released", async () => {
    const r = rig();
    const claim = name();
    const a = await r.open("gen-a");
    const b = await r.open("gen-b");
    const la = await a.claim(claim).tryAcquire();
    let got: bigint | undefined;
    const waiting = b
      .claim(claim)
      .waitForOwnership()
      .then((l) => (got = l.token));
    await advanceBy(r.clock, 100, 10);
    expect(got).toBeUndefined();
    await la.release();
    // The watch wakes the waiter at once: no acquire interval has to pass.
    await flushMicrotasks(100);
    await waiting;
    expect(got).toBe(2n);
    await a.close();
    await b.close();
  });

  it("concurrent waitForOwnership on one handle shares one lease; after release all are invalid", async () => {
    const r = rig();
    const a = await r.open("gen-a");
    const handle = a.claim(name());
    const leases = await Promise.all(Array.from({ length: 16 }, () => handle.waitForOwnership()));
    expect(new Set(leases).size).toBe(1);
    await handle.release();
    expect(leases.every((l) => !l.held && l.signal.aborted)).toBe(true);
    await a.close();
  });

  it("a wait cancelled while its acquire is in flight leaves no orphan ownership", async () => {
    const r = rig();
    const claim = name();
    const a = await r.open("gen-a");
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    r.faults.acquireClaim = (_args, call) => gate.then(call);
    const ctl = new AbortController();
    const waiting = a.claim(claim).waitForOwnership({ signal: ctl.signal, watch: false });
    await flushMicrotasks();
    ctl.abort(new Error("caller gave up"));
    await expect(waiting).rejects.toThrow("caller gave up");
    open();
    await flushMicrotasks(100);
    const record = await r.backend.getClaim(claim);
    expect(record.phase).toBe("unowned");
    expect(a.claim(claim).lease).toBeUndefined();
    await a.close();
  });
});

describe("renewal and loss of unbound claims (bound: false)", () => {
  const unbound = { bound: false };
  it("renews every renewInterval and keeps the claim far past its ttl", async () => {
    const r = rig();
    const claim = name();
    const a = await r.open("gen-a", unbound);
    const lease = await a.claim(claim).tryAcquire();
    await advanceBy(r.clock, 3_000);
    expect(lease.held).toBe(true);
    const record = await r.backend.getClaim(claim);
    expect(record).toMatchObject({ ownerGeneration: "gen-a", phase: "owned", fencingToken: lease.token });
    expect(r.events.filter((e) => e.type === "claim.renewed").length).toBeGreaterThanOrEqual(13);
    await a.close();
  });

  it("a refused renew fires the loss signal with the refusal as cause", async () => {
    const r = rig();
    const claim = name();
    const a = await r.open("gen-a", unbound);
    const lease = await a.claim(claim).tryAcquire();
    r.faults.renewClaim = () => Promise.reject(new ShiftlockError("stale_token"));
    await advanceBy(r.clock, 250);
    expect(lease.signal.aborted).toBe(true);
    const reason = lease.signal.reason as ShiftlockError;
    expect(reason.code).toBe("lease_lost");
    expect(reason.details["reason"]).toBe("lost");
    expect(hasCode(reason.cause, "stale_token")).toBe(true);
    expect(r.events.some((e) => e.type === "claim.lost")).toBe(true);
    await a.close();
  });

  it("an operator's eviction is a loss: the next renew is refused evicted and the loss signal fires at once", async () => {
    const r = rig();
    const claim = name();
    const a = await r.open("gen-a", unbound);
    const lease = await a.claim(claim).tryAcquire();
    await r.memory.evictClaim({ claimName: claim, note: "stuck" });
    await advanceBy(r.clock, 250);
    expect(lease.signal.aborted).toBe(true);
    const reason = lease.signal.reason as ShiftlockError;
    expect(reason.code).toBe("lease_lost");
    expect(hasCode(reason.cause, "evicted")).toBe(true);
    expect(r.events.some((e) => e.type === "claim.lost")).toBe(true);
    // Losing an evicted claim does not stop the generation taking it again, with a newer token.
    const again = await a.claim(claim).tryAcquire();
    expect(again.token).toBe(lease.token + 1n);
    await a.close();
  });

  it("with the service unreachable, the loss signal fires before the server deadline", async () => {
    const r = rig();
    const claim = name();
    const a = await r.open("gen-a", unbound);
    const lease = await a.claim(claim).tryAcquire();
    const serverDeadline = (await r.backend.getClaim(claim)).expiresAtMs;
    r.faults.renewClaim = () => Promise.reject(networkError());
    let firedAt: number | undefined;
    lease.signal.addEventListener("abort", () => (firedAt = r.clock.nowMs()));
    await advanceBy(r.clock, 2_000, 10);
    expect(firedAt).toBeDefined();
    expect(firedAt!).toBeLessThan(serverDeadline);
    // Nobody else could have acquired before the signal fired.
    expect(firedAt!).toBeLessThanOrEqual(serverDeadline - a.cfg.safetyMarginMs);
    await a.close({ release: false });
  });

  it("a renew that never answers is bounded by the deadline too", async () => {
    const r = rig();
    const a = await r.open("gen-a", unbound);
    const claim = name();
    const lease = await a.claim(claim).tryAcquire();
    const serverDeadline = (await r.backend.getClaim(claim)).expiresAtMs;
    r.faults.renewClaim = () => new Promise(() => undefined);
    let firedAt: number | undefined;
    lease.signal.addEventListener("abort", () => (firedAt = r.clock.nowMs()));
    await advanceBy(r.clock, 2_000, 10);
    expect(firedAt).toBeDefined();
    expect(firedAt!).toBeLessThan(serverDeadline);
    await a.close({ release: false });
  });

  it("one transient renew failure is retried, not treated as loss", async () => {
    const r = rig();
    const a = await r.open("gen-a", unbound);
    const lease = await a.claim(name()).tryAcquire();
    let failures = 1;
    r.faults.renewClaim = () => (failures-- > 0 ? Promise.reject(networkError()) : undefined);
    await advanceBy(r.clock, 2_000);
    expect(lease.held).toBe(true);
    expect(r.events.some((e) => e.type === "error" && e.op === "renew")).toBe(true);
    await a.close();
  });

  it("no spurious loss after a voluntary release", async () => {
    const r = rig();
    const a = await r.open("gen-a", unbound);
    const lease = await a.claim(name()).tryAcquire();
    await lease.release();
    expect(lease.endReason).toBe("released");
    await advanceBy(r.clock, 2_000);
    expect(r.events.filter((e) => e.type === "claim.lost")).toEqual([]);
    await a.close();
  });

  it("a throwing listener does not disturb the runtime", async () => {
    const r = rig();
    const a = await r.open("gen-a", unbound);
    a.on("claim.acquired", () => {
      throw new Error("listener bug");
    });
    a.on("claim.renewed", () => Promise.reject(new Error("async listener bug")));
    const lease = await a.claim(name()).tryAcquire();
    await advanceBy(r.clock, 500);
    expect(lease.held).toBe(true);
    await a.close();
  });

  it("close stops everything: leases end, claims are released, the generation retires", async () => {
    const r = rig();
    const claim = name();
    const a = await r.open("gen-a");
    const lease = await a.claim(claim).tryAcquire();
    await a.close();
    await a.close();
    expect(lease.signal.aborted).toBe(true);
    expect((await r.backend.getClaim(claim)).phase).toBe("unowned");
    expect((await r.backend.getGeneration("gen-a")).state).toBe("retired");
    expect(() => a.claim("other")).toThrow(ShiftlockError);
    const before = r.events.length;
    await advanceBy(r.clock, 2_000);
    expect(r.events.length).toBe(before);
    expect(r.clock.pendingSleepers).toBe(0);
  });
});
