// The claim lock behind `shiftlock claims run` (src/cli/claim-lock.ts) against the in-memory
// backend on a manual clock: waiting wakes on the watch and never polls, the wait is
// bounded, the lock is exclusive even for its own generation, renewals keep it and a
// commit to another generation is a loss; for a registered generation the claim is bound
// to the lease the lock keeps itself (no renew), lost with it, and releasing stops it.
import { describe, expect, it } from "vitest";
import { holdClaim, type HoldClaimOptions } from "../../src/cli/claim-lock.ts";
import { MemoryClaimsBackend } from "../../src/client/claims/memory-claims-backend.ts";
import { ManualClock, flushMicrotasks } from "../../src/core/clock.ts";
import { hasCode } from "../../src/protocol/errors.ts";

function setup() {
  const clock = new ManualClock();
  const backend = new MemoryClaimsBackend({ clock });
  let acquireCalls = 0;
  const counted: MemoryClaimsBackend = Object.create(backend) as MemoryClaimsBackend;
  counted.acquireClaim = (req, opts) => {
    acquireCalls += 1;
    return backend.acquireClaim(req, opts);
  };
  const claimName = `c-${crypto.randomUUID()}`;
  const options = (extra: Partial<HoldClaimOptions> = {}): HoldClaimOptions => ({
    backend: counted,
    claimName,
    generationId: "runner",
    ttlMs: 3_000,
    waitMs: 0,
    signal: new AbortController().signal,
    clock,
    ...extra,
  });
  return { clock, backend, claimName, options, acquires: () => acquireCalls };
}

describe("claims run: the claim lock", () => {
  it("waits for a held claim on the watch, without polling, and acquires once it is released", async () => {
    const { clock, backend, claimName, options, acquires } = setup();
    const held = await backend.acquireClaim({ claimName, generationId: "other", ttlMs: 3_600_000 });
    let waiting = 0;
    const pending = holdClaim(options({ waitMs: 600_000, onWaiting: () => (waiting += 1) }));
    await flushMicrotasks();
    expect(waiting).toBe(1);
    // Minutes pass with the claim held: no second attempt (a poll would have made many).
    await clock.advance(300_000);
    expect(acquires()).toBe(1);
    await backend.releaseClaim({ claimName, generationId: "other", token: held.fencingToken });
    const lease = await pending;
    expect(acquires()).toBe(2);
    expect(lease.token).toBe(held.fencingToken + 1n);
    expect((await backend.getClaim(claimName)).ownerGeneration).toBe("runner");
    await lease.release();
  });

  it("gives up with claim_held (naming the holder) when the wait ends", async () => {
    const { clock, backend, claimName, options } = setup();
    await backend.acquireClaim({ claimName, generationId: "other", ttlMs: 3_600_000 });
    const pending = holdClaim(options({ waitMs: 1_000 }));
    const outcome = pending.then(
      () => undefined,
      (err: unknown) => err,
    );
    await flushMicrotasks(); // the wait starts once the generation's lease was asked for (none: unregistered)
    await clock.advance(1_000);
    const err = await outcome;
    expect(hasCode(err, "claim_held")).toBe(true);
    expect(err).toMatchObject({ details: { claim: { ownerGeneration: "other" } } });
  });

  it("is exclusive even against its own generation", async () => {
    const { options } = setup();
    const first = await holdClaim(options());
    await expect(holdClaim(options())).rejects.toMatchObject({ code: "claim_held" });
    await first.release();
    const second = await holdClaim(options());
    expect(second.token).toBe(first.token + 1n);
    await second.release();
  });

  it("renews every ttl/3 and reports a loss when the claim is committed to another generation", async () => {
    const { clock, backend, claimName, options } = setup();
    const lost: Error[] = [];
    const lease = await holdClaim(options({ onLost: (e) => lost.push(e) }));
    await clock.advance(2_500); // past the first ttl: only renewals kept it
    expect(lease.held).toBe(true);
    expect((await backend.getClaim(claimName)).ownerGeneration).toBe("runner");
    const base = { claimName, fromGeneration: "runner", toGeneration: "next" };
    await backend.prepareTransfer({ ...base, token: lease.token, ttlMs: 3_000 });
    await backend.commitTransfer({ ...base, expectedToken: lease.token, ttlMs: 3_000 });
    await clock.advance(1_000);
    expect(lease.signal.aborted).toBe(true);
    expect(lease.endReason).toBe("lost");
    expect(lost).toHaveLength(1);
    await lease.release(); // nothing to give back: the claim is the successor's
    expect((await backend.getClaim(claimName)).ownerGeneration).toBe("next");
  });

  it("a registered generation: the claim is bound to the lease the lock keeps, with no renew", async () => {
    const { clock, backend, claimName, options } = setup();
    await backend.registerGeneration({ id: "runner", service: "cron", instanceId: "host-1" });
    let renews = 0;
    const counted = Object.create(backend) as MemoryClaimsBackend;
    counted.renewClaim = (req, opts) => {
      renews += 1;
      return backend.renewClaim(req, opts);
    };
    const lost: Error[] = [];
    const lease = await holdClaim(options({ backend: counted, onLost: (e) => lost.push(e) }));
    expect(await backend.getClaim(claimName)).toMatchObject({ ownerGeneration: "runner", bound: true, leaseEpoch: 1n });
    for (let i = 0; i < 10; i++) await clock.advance(1_000); // ten ttl/3 keepalives (over the channel)
    expect(lease.held).toBe(true);
    expect(renews).toBe(0);
    expect((await backend.getGeneration("runner")).leaseExpiresAtMs).toBeGreaterThan(clock.nowMs());
    // The service ends the lease: the claim is lost with it, at once.
    await backend.endGenerationLease("runner");
    await flushMicrotasks(100);
    expect(lease.endReason).toBe("lost");
    expect(lost).toHaveLength(1);
    await lease.release();
  });

  it("releasing a bound claim stops the lock's keepalives: the lease runs to its deadline", async () => {
    const { clock, backend, claimName, options } = setup();
    await backend.registerGeneration({ id: "runner", service: "cron", instanceId: "host-1" });
    const lease = await holdClaim(options());
    await clock.advance(1_000);
    await lease.release();
    expect((await backend.getClaim(claimName)).phase).toBe("unowned");
    const { leaseExpiresAtMs } = await backend.getGeneration("runner");
    for (let i = 0; i < 5; i++) await clock.advance(1_000);
    // Nobody kept it: it ended at its deadline (epoch 1 over, no lease).
    expect(clock.nowMs()).toBeGreaterThan(leaseExpiresAtMs);
    expect(await backend.getGeneration("runner")).toMatchObject({ leaseEpoch: 1n, leaseExpiresAtMs: 0 });
  });
});
