// Handoff from an old generation to its successor: commit, abort, partial failures, the
// transfer timeout, idempotent commit, drain, and the successor adopting the claims
// (ports of the Go reference's root-package handoff tests, §4.5, and its §5 surprises).
import { describe, expect, it } from "vitest";
import { hasCode, ShiftlockError } from "../../src/protocol/errors.ts";
import { ADOPTED_FIRST_RENEW_MAX_MS } from "../../src/client/handoff/session-claim.ts";
import { advanceBy, flushMicrotasks, networkError, rig } from "./handoff-fixtures.ts";

const name = (prefix = "claim"): string => `${prefix}-${crypto.randomUUID()}`;

describe("handoff", () => {
  it("commit retires the owner; the successor owns every claim with token + 1 and renews it", async () => {
    const r = rig();
    const [c1, c2] = [name("alpha"), name("beta")];
    const a = await r.open("gen-a");
    const b = await r.open("gen-b");
    const l1 = await a.claim(c1).tryAcquire();
    const l2 = await a.claim(c2).tryAcquire();
    const result = await a.handoffTo("gen-b");
    await a.flush();
    expect(a.state).toBe("retired");
    expect((await r.backend.getGeneration("gen-a")).state).toBe("retired");
    for (const l of [l1, l2]) {
      expect(l.held).toBe(false);
      expect(l.endReason).toBe("transferred");
      const rec = await r.backend.getClaim(l.claimName);
      expect(rec).toMatchObject({ ownerGeneration: "gen-b", phase: "owned", fencingToken: l.token + 1n });
    }
    expect(result.claims.map((c) => c.token)).toEqual([l1.token + 1n, l2.token + 1n]);
    // The successor adopts what the result hands over, without a round trip, and renews.
    const adopted = result.claims.map((c) => b.claim(c.claim).adopt(c.record, c.deadlineMs));
    expect(b.state).toBe("active");
    await advanceBy(r.clock, 3_000);
    expect(adopted.every((l) => l.held)).toBe(true);
    expect((await r.backend.getClaim(c1)).ownerGeneration).toBe("gen-b");
    // The old generation's stale token is refused everywhere.
    await expect(
      r.backend.renewClaim({ claimName: c1, generationId: "gen-a", token: l1.token, ttlMs: 1_000 }),
    ).rejects.toSatisfy((e) => hasCode(e, "not_owner"));
    expect(r.events.filter((e) => e.type === "claim.lost")).toEqual([]);
    await b.close();
  });

  it("a waiting successor takes over on the commit event, with the committed token", async () => {
    const r = rig();
    const claim = name();
    const a = await r.open("gen-a");
    const b = await r.open("gen-b");
    const old = await a.claim(claim).tryAcquire();
    let adopted: bigint | undefined;
    const waiting = b
      .claim(claim)
      .waitForOwnership()
      .then((l) => (adopted = l.token));
    await advanceBy(r.clock, 50, 10);
    expect(adopted).toBeUndefined();
    await a.handoffTo("gen-b");
    await flushMicrotasks(100);
    await waiting;
    expect(adopted).toBe(old.token + 1n);
    // Adopted from the commit event itself, without an acquire round trip.
    expect(r.events.find((e) => e.type === "claim.acquired" && e.generationId === "gen-b")).toMatchObject({
      adopted: true,
    });
    await advanceBy(r.clock, 2_000);
    expect((await r.backend.getClaim(claim)).ownerGeneration).toBe("gen-b");
    expect(r.events.filter((e) => e.type === "claim.lost")).toEqual([]);
    await b.close();
  });

  it("a successor renews what it adopted after the commit batch, within a second, not among the batch's commits", async () => {
    const r = rig();
    const claims = [name("a"), name("b"), name("c")];
    // A long ttl: the renew interval (5 s) is longer than an adoption's first renew delay.
    // Unbound sessions: bound claims have no renew of their own to time.
    const long = { leaseTtlMs: 15_000, renewIntervalMs: 5_000, bound: false };
    const a = await r.open("gen-a", long);
    const b = await r.open("gen-b", long);
    const old = await Promise.all(claims.map((c) => a.claim(c).tryAcquire()));
    const renewedAtMs: number[] = [];
    r.faults.renewClaim = (args) => {
      if ((args[0] as { generationId: string }).generationId !== "gen-a") renewedAtMs.push(r.clock.nowMs());
      return undefined;
    };
    const result = await a.handoffTo("gen-b");
    const adoptedAtMs = r.clock.nowMs();
    const adopted = result.claims.map((c) => b.claim(c.claim).adopt(c.record, c.deadlineMs));
    expect(adopted.map((l) => l.token)).toEqual(old.map((l) => l.token + 1n));
    await flushMicrotasks(100);
    expect(renewedAtMs).toEqual([]);
    await advanceBy(r.clock, ADOPTED_FIRST_RENEW_MAX_MS - 50);
    expect(renewedAtMs).toEqual([]);
    await advanceBy(r.clock, 50);
    expect(renewedAtMs).toEqual(claims.map(() => adoptedAtMs + ADOPTED_FIRST_RENEW_MAX_MS));
    // Each deadline is re-based on that renew's send time.
    for (const l of adopted) expect(l.deadlineMs).toBe(adoptedAtMs + ADOPTED_FIRST_RENEW_MAX_MS + 15_000);
    // A ttl whose renew interval (200 ms) is shorter renews at its own interval, as a fresh lease does.
    const c = await r.open("gen-c", { leaseTtlMs: 15_000, renewIntervalMs: 200, bound: false });
    const handed = await b.handoffTo("gen-c");
    const quickAtMs = r.clock.nowMs();
    renewedAtMs.length = 0;
    const quick = handed.claims.map((h) => c.claim(h.claim).adopt(h.record, h.deadlineMs));
    await advanceBy(r.clock, 150);
    expect(renewedAtMs).toEqual([]);
    await advanceBy(r.clock, 50);
    expect(renewedAtMs).toEqual(claims.map(() => quickAtMs + 200));
    expect(quick.every((l) => l.held)).toBe(true);
    await c.close();
  });

  it("a waiting successor gets ownership before its watch is closed, and the watch is closed on the next tick", async () => {
    const r = rig();
    const claim = name();
    const a = await r.open("gen-a");
    const b = await r.open("gen-b");
    await a.claim(claim).tryAcquire();
    const order: string[] = [];
    r.faults.watchClaim = (args, call) => {
      const watch = call() as unknown as { close(): void };
      const close = watch.close.bind(watch);
      watch.close = () => {
        order.push((args[0] as string) === claim ? "watch closed" : "other");
        close();
      };
      return watch as never;
    };
    const waiting = b
      .claim(claim)
      .waitForOwnership()
      .then(() => order.push("owned"));
    await advanceBy(r.clock, 50, 10);
    await a.handoffTo("gen-b");
    await flushMicrotasks(100);
    await waiting;
    // Adopting a whole batch, a successor takes every claim before it pays for any socket close.
    expect(order).toEqual(["owned"]);
    await r.clock.advance(0);
    expect(order).toEqual(["owned", "watch closed"]);
    await b.close();
  });

  it("a successor whose acquire poll is still in flight adopts on the commit event without waiting for it", async () => {
    const r = rig();
    const claim = name();
    const a = await r.open("gen-a");
    const b = await r.open("gen-b");
    const old = await a.claim(claim).tryAcquire();
    // B's acquire polls hang until the gate opens (a slow server answer).
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    r.faults.acquireClaim = (args, call) =>
      (args[0] as { generationId: string }).generationId === "gen-b" ? gate.then(call) : undefined;
    let adopted: bigint | undefined;
    const waiting = b
      .claim(claim)
      .waitForOwnership()
      .then((l) => (adopted = l.token));
    await flushMicrotasks(50);
    await a.handoffTo("gen-b");
    await flushMicrotasks(100);
    expect(adopted).toBe(old.token + 1n);
    await waiting;
    // The poll answers late (the claim is B's by then): same lease, no release, no second epoch.
    open();
    await flushMicrotasks(100);
    const lease = b.claim(claim).lease!;
    expect(lease.token).toBe(old.token + 1n);
    expect(await r.backend.getClaim(claim)).toMatchObject({ ownerGeneration: "gen-b", fencingToken: old.token + 1n });
    expect(r.events.filter((e) => e.type === "claim.acquired" && e.generationId === "gen-b")).toHaveLength(1);
    expect(r.events.filter((e) => e.type === "claim.released" && e.generationId === "gen-b")).toEqual([]);
    await b.close();
  });

  it("abort keeps ownership with the same token; renewals and new work resume", async () => {
    const r = rig();
    const claim = name();
    const a = await r.open("gen-a");
    const lease = await a.claim(claim).tryAcquire();
    const h = a.prepareHandoff("gen-b");
    expect(a.state).toBe("draining");
    await h.drain();
    expect(() => a.drain.begin()).toThrow(ShiftlockError);
    await h.transfer();
    expect(a.state).toBe("transferring");
    expect(await r.backend.getClaim(claim)).toMatchObject({ phase: "reserved", pendingSuccessor: "gen-b" });
    await h.abort();
    expect(h.status).toBe("aborted");
    expect(a.state).toBe("active");
    expect(await r.backend.getClaim(claim)).toMatchObject({
      ownerGeneration: "gen-a",
      phase: "owned",
      fencingToken: lease.token,
    });
    expect(lease.held).toBe(true);
    a.drain.begin()(); // the drain group reopened (Go §5.14 kept it draining forever)
    await advanceBy(r.clock, 20 * 100, 100);
    expect(lease.held).toBe(true);
    expect((await r.backend.getClaim(claim)).ownerGeneration).toBe("gen-a");
    await expect(h.commit()).rejects.toSatisfy((e) => hasCode(e, "no_transfer"));
    await a.close();
  });

  it("a refused prepare aborts the claims already prepared, in claim order", async () => {
    const r = rig();
    const [alpha, beta, gamma] = ["a-", "b-", "c-"].map((p) => p + crypto.randomUUID()) as [string, string, string];
    const a = await r.open("gen-partial");
    for (const c of [alpha, beta, gamma]) await a.claim(c).tryAcquire();
    r.faults.prepareTransfer = (args) =>
      (args[0] as { claimName: string }).claimName === beta
        ? Promise.reject(new ShiftlockError("stale_token"))
        : undefined;
    const h = a.prepareHandoff("gen-b");
    await expect(h.transfer()).rejects.toSatisfy((e) => hasCode(e, "stale_token"));
    for (const c of [alpha, beta, gamma]) {
      expect(await r.backend.getClaim(c)).toMatchObject({ ownerGeneration: "gen-partial", phase: "owned" });
    }
    const aborted = r.events.flatMap((e) => (e.type === "transfer.aborted" ? [e.claim] : []));
    expect(aborted).toEqual([alpha, gamma]);
    expect(a.state).toBe("active");
    // The refusal proved beta's epoch over for this generation: its lease is lost.
    expect(a.heldClaims().sort()).toEqual([alpha, gamma]);
    await a.close();
  });

  it("a transfer not committed within transferTimeout is aborted automatically", async () => {
    const r = rig();
    const claim = name();
    const a = await r.open("gen-a");
    const lease = await a.claim(claim).tryAcquire();
    const h = a.prepareHandoff("gen-b");
    await h.transfer();
    await advanceBy(r.clock, 1_100);
    expect(h.status).toBe("aborted");
    expect(a.state).toBe("active");
    expect(await r.backend.getClaim(claim)).toMatchObject({ ownerGeneration: "gen-a", phase: "owned" });
    expect(lease.held).toBe(true);
    await expect(h.commit()).rejects.toSatisfy((e) => hasCode(e, "no_transfer"));
    await a.close();
  });

  it("a commit whose response is lost is retried with the same operation id: one token advance", async () => {
    const r = rig();
    const claim = name();
    const a = await r.open("gen-a");
    const lease = await a.claim(claim).tryAcquire();
    let lost = 1;
    r.faults.commitTransfer = (_args, call) =>
      lost-- > 0 ? call().then(() => Promise.reject(networkError())) : undefined;
    const committing = a.handoffTo("gen-b");
    await advanceBy(r.clock, 200, 10);
    const result = await committing;
    expect(result.claims[0]!.token).toBe(lease.token + 1n);
    expect((await r.backend.getClaim(claim)).fencingToken).toBe(lease.token + 1n);
    expect(a.state).toBe("retired");
  });

  it("a partly failed commit keeps the generation active with the claims it still holds (never retired)", async () => {
    const r = rig();
    const [alpha, beta] = ["a-", "b-"].map((p) => p + crypto.randomUUID()) as [string, string];
    const a = await r.open("gen-a");
    await a.claim(alpha).tryAcquire();
    const lb = await a.claim(beta).tryAcquire();
    r.faults.commitTransfer = (args) =>
      (args[0] as { claimName: string }).claimName === beta
        ? Promise.reject(new ShiftlockError("concurrent_transfer"))
        : undefined;
    const h = a.prepareHandoff("gen-b");
    await expect(h.commit()).rejects.toSatisfy(
      (e) => hasCode(e, "concurrent_transfer") && (e.details["committed"] as string[])[0] === alpha,
    );
    expect((await r.backend.getClaim(alpha)).ownerGeneration).toBe("gen-b");
    expect(await r.backend.getClaim(beta)).toMatchObject({ ownerGeneration: "gen-a", phase: "owned" });
    expect(lb.held).toBe(true);
    expect(a.state).toBe("active");
    delete r.faults.commitTransfer;
    // Go §5.15: a retried commit retired the generation anyway. Here it is refused.
    await expect(h.commit()).rejects.toSatisfy((e) => hasCode(e, "no_transfer"));
    await a.flush();
    expect((await r.backend.getGeneration("gen-a")).state).toBe("active");
    await a.close();
  });

  it("drain waits for work in flight; a drain timeout aborts the handoff and reopens the drain group", async () => {
    const r = rig();
    const claim = name();
    const a = await r.open("gen-a");
    await a.claim(claim).tryAcquire();
    const end = a.drain.begin();
    const h = a.prepareHandoff("gen-b");
    let drained = false;
    const draining = h.drain().then(() => (drained = true));
    await advanceBy(r.clock, 100);
    expect(drained).toBe(false);
    end();
    await draining;
    await h.abort();

    const end2 = a.drain.begin();
    const h2 = a.prepareHandoff("gen-b");
    const failing = h2.drain().catch((e: unknown) => e);
    await advanceBy(r.clock, 1_100);
    const err = await failing;
    expect(hasCode(err, "invalid_state") && err.details["reason"] === "drain_timeout").toBe(true);
    expect(h2.status).toBe("aborted");
    expect(a.state).toBe("active");
    end2();
    a.drain.begin()();
    expect(r.events.some((e) => e.type === "drain.failed")).toBe(true);
    await a.close();
  });

  it("a standby generation with no claims hands off by retiring (Go §5.13 refused it)", async () => {
    const r = rig();
    const a = await r.open("gen-standby");
    const result = await a.handoffTo("gen-b");
    expect(result.claims).toEqual([]);
    await a.flush();
    expect((await r.backend.getGeneration("gen-standby")).state).toBe("retired");
  });

  it("refuses acquiring during a handoff and a second concurrent handoff", async () => {
    const r = rig();
    const a = await r.open("gen-a");
    await a.claim(name()).tryAcquire();
    const h = a.prepareHandoff("gen-b");
    await expect(a.claim(name()).tryAcquire()).rejects.toSatisfy((e) => hasCode(e, "invalid_state"));
    expect(() => a.prepareHandoff("gen-c")).toThrow(ShiftlockError);
    await h.abort();
    await a.close();
  });

  it("emits the handoff's events in order", async () => {
    const r = rig();
    const a = await r.open("gen-a");
    await a.claim(name()).tryAcquire();
    const from = r.events.length;
    await a.handoffTo("gen-b");
    expect(r.events.slice(from).map((e) => (e.type === "generation.state" ? `state:${e.to}` : e.type))).toEqual([
      "state:draining",
      "handoff.started",
      "drain.started",
      "drain.completed",
      "state:transferring",
      "transfer.prepared",
      "claim.released",
      "transfer.committed",
      "handoff.completed",
      "state:retired",
      "closed",
    ]);
  });
});
