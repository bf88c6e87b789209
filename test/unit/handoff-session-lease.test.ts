// The session's lease (docs/protocol.md#sessions): one keepalive loop per session whatever
// the number of bound claims, over the lease channel or, without one, over HTTP; the loss of
// every bound claim before the server's deadline when keepalives fail; at once when the
// server ends the epoch, refuses a keepalive or names another epoch; late pongs that count
// for nothing; and a fresh epoch after each loss. ManualClock + the in-memory backend.
import { getEventListeners } from "node:events";
import { describe, expect, it } from "vitest";
import type { ClaimsBackend } from "../../src/client/claims/claims-backend.ts";
import { HttpClaimsBackend } from "../../src/client/claims/http-claims-backend.ts";
import { LEASE_CHANNEL_ATTEMPTS } from "../../src/client/claims/lease-channel.ts";
import { MemoryClaimsBackend } from "../../src/client/claims/memory-claims-backend.ts";
import { GenerationSession, type Lease } from "../../src/client/handoff/index.ts";
import { Term } from "../../src/client/handoff/lease-term.ts";
import { LeaseDeadline } from "../../src/client/lease-timing.ts";
import type { WebSocketLike } from "../../src/client/transport/websocket.ts";
import { ManualClock } from "../../src/core/clock.ts";
import { hasCode, ShiftlockError } from "../../src/protocol/errors.ts";
import { advanceBy, flushMicrotasks, networkError, rig, type Rig } from "./handoff-fixtures.ts";
import { memoryServer } from "./memory-fetch.ts";

const names = (n: number): string[] => Array.from({ length: n }, (_, i) => `claim-${i}`);

/** Counts of the calls the session makes through the rig's backend. */
function counting(r: Rig): { renews: number; keepalives: number } {
  const calls = { renews: 0, keepalives: 0 };
  r.faults.renewClaim = () => {
    calls.renews++;
    return undefined;
  };
  r.faults.keepaliveGeneration = () => {
    calls.keepalives++;
    return undefined;
  };
  return calls;
}

/** The rig's backend without a lease channel (a place with no WebSocket constructor). */
function withoutChannel(backend: ClaimsBackend): ClaimsBackend {
  return new Proxy(backend, {
    get: (target, prop, receiver): unknown =>
      prop === "openLeaseChannel" ? undefined : Reflect.get(target, prop, receiver),
  });
}

/** Move `clock` on without running any timer: a process paused (GC, a suspended VM) for `ms`. */
function jump(clock: ManualClock, ms: number): void {
  (clock as unknown as { now: number }).now += ms;
}

/** The local time each lease's signal fired, once they all did. */
function firedAt(leases: Lease[], r: Rig): Map<Lease, number> {
  const at = new Map<Lease, number>();
  for (const l of leases) l.signal.addEventListener("abort", () => at.set(l, r.clock.nowMs()));
  return at;
}

describe("one lease, one keepalive loop", () => {
  it("N bound claims cost no renew and one ping per interval, the same for 1 claim as for 40", async () => {
    const pingsFor = async (n: number): Promise<number> => {
      const r = rig();
      const calls = counting(r);
      const a = await r.open("gen-a");
      const leases = await Promise.all(names(n).map((c) => a.claim(c).tryAcquire()));
      const before = r.memory.pings;
      await advanceBy(r.clock, 5_000);
      expect(leases.every((l) => l.held)).toBe(true);
      expect(calls.renews).toBe(0);
      // The epoch started with one HTTP keepalive; every later keepalive was a ping.
      expect(calls.keepalives).toBe(1);
      for (const l of leases) {
        expect(await r.memory.getClaim(l.claimName)).toMatchObject({
          ownerGeneration: "gen-a",
          bound: true,
          leaseEpoch: 1n,
        });
      }
      // Every lease follows the session's one deadline.
      expect(new Set(leases.map((l) => l.deadlineMs))).toEqual(new Set([a.leaseEpoch!.deadlineMs]));
      expect(r.events.filter((e) => e.type === "claim.renewed")).toEqual([]);
      await a.close();
      return r.memory.pings - before;
    };
    const one = await pingsFor(1);
    expect(one).toBe(5_000 / 200);
    expect(await pingsFor(40)).toBe(one);
  });

  it("without a lease channel, one HTTP keepalive per interval keeps every claim", async () => {
    const r = rig();
    const calls = counting(r);
    const a = await r.open("gen-a", { backend: withoutChannel(r.backend) });
    const leases = await Promise.all(names(10).map((c) => a.claim(c).tryAcquire()));
    await advanceBy(r.clock, 5_000);
    expect(leases.every((l) => l.held)).toBe(true);
    expect(calls.renews).toBe(0);
    expect(calls.keepalives).toBe(1 + 5_000 / 200);
    expect(r.memory.pings).toBe(0);
    const via = new Set(r.events.flatMap((e) => (e.type === "lease.renewed" ? [e.via] : [])));
    expect(via).toEqual(new Set(["http"]));
    await a.close();
  });

  it("a session with bound: false renews each claim and keeps no lease", async () => {
    const r = rig();
    const calls = counting(r);
    const a = await r.open("gen-a", { bound: false });
    await Promise.all(names(3).map((c) => a.claim(c).tryAcquire()));
    await advanceBy(r.clock, 1_000);
    expect(calls.keepalives).toBe(0);
    expect(calls.renews).toBe(3 * 5);
    expect(a.leaseEpoch).toBeUndefined();
    expect((await r.memory.getClaim("claim-0")).bound).toBe(false);
    await a.close();
  });
});

describe("an epoch's loss reaches every claim bound to it", () => {
  it("through one listener on its signal, however many claims follow it; a claim that stopped following hears nothing", () => {
    const term = new Term(1n, new LeaseDeadline(1_000, 60_000), 0);
    const heard: string[] = [];
    const forget = names(200).map((c) => term.whenLost((err) => heard.push(`${c}: ${err.message}`)));
    // 200 listeners on one AbortSignal would print Node's MaxListenersExceededWarning.
    expect(getEventListeners(term.lost, "abort")).toHaveLength(1);
    forget[7]!();
    term.controller.abort(new Error("keepalives failed"));
    expect(heard).toHaveLength(199);
    expect(heard).not.toContain("claim-7: keepalives failed");
    expect(heard[0]).toBe("claim-0: keepalives failed");
    // A claim bound after the loss hears it at once.
    term.whenLost((err) => heard.push(`late: ${err.message}`));
    expect(heard.at(-1)).toBe("late: keepalives failed");
  });
});

describe("the upgrade fails", () => {
  /** A WebSocket the service refuses: `error`, then `close`, never `open`. */
  class RefusedSocket implements WebSocketLike {
    static opened = 0;
    readyState = 0;
    private readonly listeners: { type: string; listener: (event: never) => void }[] = [];
    constructor() {
      RefusedSocket.opened++;
      queueMicrotask(() => {
        this.readyState = 3;
        for (const { type, listener } of this.listeners) {
          if (type === "error") (listener as () => void)();
          if (type === "close") (listener as (e: unknown) => void)({ code: 1006, reason: "" });
        }
      });
    }
    addEventListener(type: string, listener: (event: never) => void): void {
      this.listeners.push({ type, listener });
    }
    send(): void {
      throw new Error("not open");
    }
    close(): void {}
  }

  it("after a few refused upgrades the session keeps its lease with HTTP keepalives", async () => {
    const clock = new ManualClock(1_000_000);
    const memory = new MemoryClaimsBackend({ clock });
    const server = memoryServer(memory);
    const backend = new HttpClaimsBackend({
      baseUrl: "http://fake",
      token: "t",
      namespace: "ns",
      fetch: server.fetch,
      WebSocket: RefusedSocket,
      clock,
    });
    const errors: string[] = [];
    const a = await GenerationSession.open({
      service: "svc",
      instanceId: "a",
      generationId: "gen-a",
      backend,
      clock,
      leaseTtlMs: 1_000,
      renewIntervalMs: 200,
    });
    a.on("error", (e) => errors.push(e.op));
    const leases = await Promise.all(names(5).map((c) => a.claim(c).tryAcquire()));
    const from = server.requests.length;
    await advanceBy(clock, 5_000);
    expect(leases.every((l) => l.held)).toBe(true);
    expect(RefusedSocket.opened).toBe(LEASE_CHANNEL_ATTEMPTS);
    expect(errors).toContain("lease-channel");
    const during = server.requests.slice(from).map((r) => r.operationId);
    expect(during.filter((op) => op === "keepaliveGeneration")).toHaveLength(5_000 / 200);
    expect(during.filter((op) => op !== "keepaliveGeneration" && op !== "getGeneration")).toEqual([]);
    await a.close();
  });
});

describe("loss before the server's deadline when keepalives fail", () => {
  it("a cut link: every bound claim's signal fires at once, before the deadline the service holds", async () => {
    const r = rig();
    const a = await r.open("gen-a");
    const leases = await Promise.all(names(5).map((c) => a.claim(c).tryAcquire()));
    await advanceBy(r.clock, 1_000);
    r.memory.link = "cut";
    r.faults.keepaliveGeneration = () => Promise.reject(networkError());
    r.faults.endGenerationLease = () => Promise.reject(networkError());
    // No keepalive reaches the service from here on: this is its deadline (getGeneration is exact).
    const serverDeadlineMs = (await r.memory.getGeneration("gen-a")).leaseExpiresAtMs;
    const fired = firedAt(leases, r);
    await advanceBy(r.clock, 2_000, 10);
    expect(fired.size).toBe(leases.length);
    expect(new Set(fired.values()).size).toBe(1);
    const at = [...fired.values()][0]!;
    expect(at).toBeLessThanOrEqual(serverDeadlineMs - a.cfg.safetyMarginMs);
    for (const l of leases) {
      expect(l.endReason).toBe("lost");
      expect(hasCode((l.signal.reason as ShiftlockError).cause, "lease_lost")).toBe(true);
    }
    expect(r.events.filter((e) => e.type === "lease.lost").map((e) => e.epoch)).toEqual([1n]);
    // The link heals: the session starts a fresh epoch, and claims bind to it.
    r.memory.link = "up";
    delete r.faults.keepaliveGeneration;
    delete r.faults.endGenerationLease;
    await advanceBy(r.clock, 2_000);
    expect(a.leaseEpoch?.epoch).toBe(2n);
    const again = await a.claim("claim-0").tryAcquire();
    expect(await r.memory.getClaim(again.claimName)).toMatchObject({ bound: true, leaseEpoch: 2n });
    await a.close();
  });

  it("HTTP keepalives failing: the loss fires before the deadline too", async () => {
    const r = rig();
    const a = await r.open("gen-a", { backend: withoutChannel(r.backend) });
    const lease = await a.claim("c").tryAcquire();
    await advanceBy(r.clock, 500);
    r.faults.keepaliveGeneration = () => new Promise(() => undefined); // never answers
    const serverDeadlineMs = (await r.memory.getGeneration("gen-a")).leaseExpiresAtMs;
    const fired = firedAt([lease], r);
    await advanceBy(r.clock, 2_000, 10);
    expect(fired.get(lease)).toBeLessThanOrEqual(serverDeadlineMs - a.cfg.safetyMarginMs);
    await a.close({ release: false });
  });

  it("answers held back: the epoch is lost, ended on the service though its pings kept it there, and epoch 2 starts", async () => {
    const r = rig();
    const a = await r.open("gen-a");
    const leases = await Promise.all(names(3).map((c) => a.claim(c).tryAcquire()));
    // Pings keep reaching the service (its lease goes on), but every answer is held back.
    r.memory.link = "held";
    r.faults.keepaliveGeneration = () => Promise.reject(networkError());
    const fired = firedAt(leases, r);
    await advanceBy(r.clock, 1_500, 10);
    expect(fired.size).toBe(3);
    r.memory.link = "up";
    r.memory.release();
    delete r.faults.keepaliveGeneration;
    await advanceBy(r.clock, 500);
    expect(leases.every((l) => l.endReason === "lost")).toBe(true);
    // The lost epoch was ended on the service (its claims are free), and epoch 2 is held.
    expect(a.leaseEpoch?.epoch).toBe(2n);
    for (const l of leases) expect((await r.memory.getClaim(l.claimName)).phase).toBe("unowned");
    expect(r.events.filter((e) => e.type === "lease.lost").map((e) => e.epoch)).toEqual([1n]);
    expect(r.events.filter((e) => e.type === "lease.started").map((e) => e.epoch)).toEqual([2n]);
    await a.close();
  });

  it("a pong that arrives after the deadline already held (a paused process) counts for nothing", async () => {
    const r = rig();
    const a = await r.open("gen-a");
    const lease = await a.claim("c").tryAcquire();
    await advanceBy(r.clock, 1_000);
    const deadlineMs = a.leaseEpoch!.deadlineMs; // the last confirmed ping + ttl
    r.memory.link = "held";
    r.faults.keepaliveGeneration = () => Promise.reject(networkError());
    // The next ping goes out and the session waits for its pong, which is held back.
    await advanceBy(r.clock, a.cfg.renewIntervalMs - (r.clock.nowMs() - (deadlineMs - a.cfg.leaseTtlMs)) + 10, 10);
    // The process is paused past the deadline (no timer runs), then the pong arrives first.
    jump(r.clock, deadlineMs + 50 - r.clock.nowMs());
    r.memory.link = "up";
    expect(r.memory.release()).toBeGreaterThan(0);
    await flushMicrotasks(100);
    await r.clock.advance(0); // the overdue timers run
    await flushMicrotasks(100);
    // Counted, that pong would have moved the deadline past now: it did not.
    expect(lease.endReason).toBe("lost");
    expect(r.events.filter((e) => e.type === "lease.renewed" && e.timeMs > deadlineMs)).toEqual([]);
    await a.close({ release: false });
  });
});

describe("loss at once", () => {
  it("the server ends the epoch: the channel hears it, every bound claim is lost, epoch 2 starts", async () => {
    const r = rig();
    const a = await r.open("gen-a");
    const leases = await Promise.all(names(4).map((c) => a.claim(c).tryAcquire()));
    await r.memory.endGenerationLease("gen-a");
    await flushMicrotasks(200);
    for (const l of leases) {
      expect(l.endReason).toBe("lost");
      expect((l.signal.reason as Error).message).toContain("ended");
      expect((await r.memory.getClaim(l.claimName)).phase).toBe("unowned");
    }
    expect(a.leaseEpoch?.epoch).toBe(2n);
    const next = await a.claim("claim-0").tryAcquire();
    expect(next.token).toBe(leases[0]!.token + 1n);
    expect((await r.memory.getClaim("claim-0")).leaseEpoch).toBe(2n);
    await a.close();
  });

  it("over HTTP, a keepalive that names another epoch ends the old one at once and the new one is kept without another request", async () => {
    const r = rig();
    const calls = counting(r);
    const a = await r.open("gen-a", { backend: withoutChannel(r.backend) });
    const lease = await a.claim("c").tryAcquire();
    await r.memory.endGenerationLease("gen-a"); // behind the session's back
    await advanceBy(r.clock, 200);
    expect(lease.endReason).toBe("lost");
    expect(a.leaseEpoch?.epoch).toBe(2n);
    expect(calls.keepalives).toBe(2); // the start, and the one that revealed epoch 2
    await a.close();
  });

  it("a refused keepalive (the generation retired behind the session's back) is a loss, and acquiring is refused", async () => {
    const r = rig();
    const a = await r.open("gen-a", { backend: withoutChannel(r.backend) });
    const lease = await a.claim("c").tryAcquire();
    await r.memory.updateGeneration({ id: "gen-a", state: "retired" });
    await advanceBy(r.clock, 200);
    expect(lease.endReason).toBe("lost");
    await expect(a.claim("d").tryAcquire()).rejects.toSatisfy((e) => hasCode(e, "invalid_state"));
    await a.close({ release: false });
  });

  it("an acquire answered no_lease ends the epoch; waitForOwnership goes on under the next", async () => {
    const r = rig();
    const a = await r.open("gen-a", { backend: withoutChannel(r.backend) });
    const held = await a.claim("held").tryAcquire();
    await r.memory.endGenerationLease("gen-a"); // the session learns it only from the service
    await expect(a.claim("c").tryAcquire()).rejects.toSatisfy((e) => hasCode(e, "no_lease"));
    expect(held.endReason).toBe("lost");
    const lease = await a.claim("c").waitForOwnership();
    expect(await r.memory.getClaim(lease.claimName)).toMatchObject({ bound: true, leaseEpoch: 2n });
    await a.close();
  });
});

describe("handoff between bound sessions", () => {
  it("the claims stay bound to the owner until the commit binds them to the successor's epoch", async () => {
    const r = rig();
    const calls = counting(r);
    const a = await r.open("gen-a");
    const b = await r.open("gen-b");
    const old = await Promise.all(names(3).map((c) => a.claim(c).tryAcquire()));
    const h = a.prepareHandoff("gen-b");
    await h.transfer();
    for (const l of old) {
      expect(await r.memory.getClaim(l.claimName)).toMatchObject({
        phase: "reserved",
        ownerGeneration: "gen-a",
        pendingSuccessor: "gen-b",
        bound: true,
        leaseEpoch: 1n,
      });
    }
    const result = await h.commit();
    const epochB = b.leaseEpoch!;
    for (const c of result.claims) {
      expect(c.record).toMatchObject({ ownerGeneration: "gen-b", bound: true, leaseEpoch: epochB.epoch });
    }
    const adopted = result.claims.map((c) => b.claim(c.claim).adopt(c.record, c.deadlineMs));
    expect(adopted.every((l) => l.deadlineMs === b.leaseEpoch!.deadlineMs)).toBe(true);
    await advanceBy(r.clock, 3_000);
    expect(adopted.every((l) => l.held)).toBe(true);
    expect(calls.renews).toBe(0);
    // The successor's claims live and die with its lease.
    await r.memory.endGenerationLease("gen-b");
    await flushMicrotasks(200);
    expect(adopted.every((l) => l.endReason === "lost")).toBe(true);
    await b.close();
  });

  it("a successor with bound: false gets the claims unbound and renews them itself", async () => {
    const r = rig();
    const a = await r.open("gen-a");
    const b = await r.open("gen-b", { bound: false });
    await a.claim("c").tryAcquire();
    let adopted: Lease | undefined;
    const waiting = b
      .claim("c")
      .waitForOwnership()
      .then((l) => (adopted = l));
    await a.handoffTo("gen-b");
    await flushMicrotasks(100);
    await waiting;
    expect(await r.memory.getClaim("c")).toMatchObject({ ownerGeneration: "gen-b", bound: false });
    await advanceBy(r.clock, 3_000);
    expect(adopted!.held).toBe(true);
    expect(r.events.some((e) => e.type === "claim.renewed" && e.generationId === "gen-b")).toBe(true);
    await b.close();
  });
});

describe("a keepalive refusal is no transient failure", () => {
  it("open() fails with the keepalive's refusal when the lease cannot start", async () => {
    const r = rig();
    r.faults.keepaliveGeneration = () => Promise.reject(new ShiftlockError("invalid_state", "retired"));
    await expect(r.open("gen-a")).rejects.toSatisfy((e) => hasCode(e, "invalid_state"));
  });
});
