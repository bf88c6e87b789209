/**
 * The coord conformance suite: one set of behaviours every `Coordinator` must show, run
 * against the in-memory coordinator (`memory-coord.test.ts`, unit project) and the real
 * server (`server-coord.test.ts`, e2e project).
 *
 * Ports spacewave's eight conformance checks and `CheckDetectedLoss` (reference §4.2–4.3),
 * with the protocol's stronger rules where they differ (generation exactly +1 per publish, replay of
 * every missed publish with its prefix, FIFO waiting, fencing epochs, publish CAS, keyed
 * snapshot/watch unsupported, scope-empty), plus the client's own promises (keepalive keeps
 * a lease, wantLock surfaced, aborting a wait leaves the queue).
 *
 * Every test uses fresh volume ids, so implementations may share state between tests.
 * Time-dependent checks call `hooks.elapse(ms)`: a ManualClock advance in memory, a real
 * wait against the server. Event waits are bounded by a real-time guard only so that a
 * failure reports instead of hanging.
 */
import { describe, expect, it } from "vitest";
import { hasCode, ShiftlockError } from "../../src/protocol/errors.ts";
import { isScopeEmpty } from "../../src/client/coord/coord-scope.ts";
import type { CoordEvent, CoordWatch, Coordinator, Scope, WriteLease } from "../../src/client/coord/coord-types.ts";
import { UnsupportedCoordinator } from "../../src/client/coord/unsupported-coordinator.ts";

/** Two handles on the same coordination state (may be the same object). */
export interface CoordFixture {
  first: Coordinator;
  second: Coordinator;
  /** A handle allowed to evict (the `admin` role over HTTP) on the same state. */
  operator: Coordinator;
  close?(): Promise<void> | void;
}

export interface CoordHooks<F extends CoordFixture> {
  /** Let `ms` of coordinator time pass (advance the fixture's clock, or really wait). */
  elapse(fixture: F, ms: number): Promise<void>;
  /** End a lease behind its holder's back, as the service would on loss. */
  revoke(fixture: F, scope: Scope, leaseId: string): Promise<void>;
  /** A lease ttl for the time-dependent checks: short, yet safe from spurious loss here. */
  shortTtlMs: number;
  /** Real-time guard for one awaited event or settlement (default 5 s). */
  guardMs?: number;
}

const encoder = new TextEncoder();
const bytes = (text: string): Uint8Array => encoder.encode(text);
const uid = (prefix: string): string => `${prefix}-${crypto.randomUUID()}`;

/** Reject with a clear message when `promise` takes longer than `ms` of real time. */
async function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const guard = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), ms);
  });
  try {
    return await Promise.race([promise, guard]);
  } finally {
    clearTimeout(timer);
  }
}

/** True when `promise` has already settled (after letting queued callbacks run). */
async function settled(promise: Promise<unknown>): Promise<boolean> {
  const pending = Symbol("pending");
  const winner = await Promise.race([
    promise.then(
      () => true,
      () => true,
    ),
    new Promise((r) => setTimeout(() => r(pending), 0)),
  ]);
  return winner !== pending;
}

export function runCoordConformance<F extends CoordFixture>(
  name: string,
  makeCoordinator: () => Promise<F> | F,
  hooks: CoordHooks<F>,
): void {
  const guardMs = hooks.guardMs ?? 5_000;
  const cleanups: (() => Promise<void> | void)[] = [];

  async function fixture(): Promise<F> {
    const f = await makeCoordinator();
    if (f.close !== undefined) cleanups.push(() => f.close?.());
    return f;
  }

  async function nextEvent(watch: CoordWatch, what = "an event"): Promise<CoordEvent> {
    const it = watch[Symbol.asyncIterator]();
    const res = await within(it.next(), guardMs, what);
    if (res.done === true) throw new Error(`watch ended while waiting for ${what}`);
    return res.value;
  }

  /** Skip events until one matches (events are hints: others may interleave). */
  async function eventWhere(watch: CoordWatch, pred: (e: CoordEvent) => boolean, what: string): Promise<CoordEvent> {
    for (;;) {
      const e = await nextEvent(watch, what);
      if (pred(e)) return e;
    }
  }

  async function acquired(c: Coordinator, scope: Scope, ttlMs?: number): Promise<WriteLease> {
    const res = await c.tryAcquireWriteLease(scope, ttlMs === undefined ? {} : { ttlMs });
    if (!res.acquired) throw new Error(`lease unexpectedly busy for ${scope.participantId}`);
    return res.lease;
  }

  describe(`coord conformance: ${name}`, () => {
    const after = async (): Promise<void> => {
      for (const c of cleanups.splice(0)) await c();
    };

    it("C1 generation, root, prefix and missed-event recovery", async () => {
      const f = await fixture();
      try {
        const ids = { volumeId: uid("volume-generation"), objectStoreId: "objects-generation" };
        const writer: Scope = { ...ids, participantId: "writer" };
        const reader: Scope = { ...ids, participantId: "reader" };
        const before = await f.second.snapshot(reader);
        expect(before).toEqual({ ...ids, generation: 0n, root: null });
        const root = { bucketId: "bucket-a" };
        const live = await f.second.watch(reader, before.generation);
        const lease = await acquired(f.first, writer);
        const snap = await lease.publish({ root, keyPrefixChanged: bytes("world-head/") });
        expect(snap.generation).toBe(before.generation + 1n);
        expect(snap.root).toEqual(root);
        const g = snap.generation;
        const first = await nextEvent(live, "the publish event");
        expect(first).toMatchObject({ ...ids, processId: "writer", generation: g, wantLock: false, unlocked: false });
        expect(first.rootChanged).toEqual(root);
        expect(first.keyPrefixChanged).toEqual(bytes("world-head/"));
        expect(await f.second.snapshot(reader)).toEqual({ ...ids, generation: g, root });
        const again = await f.second.watch(reader, before.generation);
        const replayed = await nextEvent(again, "the replayed publish");
        expect(replayed.generation).toBe(g);
        expect(replayed.rootChanged).toEqual(root);
        expect(replayed.keyPrefixChanged).toEqual(bytes("world-head/"));
        live.close();
        again.close();
        await lease.release();
      } finally {
        await after();
      }
    });

    it("C2 a waiter announces wantLock and gets the lease on release", async () => {
      const f = await fixture();
      try {
        const ids = { volumeId: uid("volume-wait"), objectStoreId: "objects-wait" };
        const first: Scope = { ...ids, participantId: "first" };
        const second: Scope = { ...ids, participantId: "second" };
        const watch = await f.second.watch(second, 0n);
        const leaseA = await acquired(f.first, first);
        const waiting = f.second.waitAcquireWriteLease(second);
        const want = await nextEvent(watch, "wantLock");
        expect(want).toMatchObject({ wantLock: true, processId: "second" });
        await leaseA.release();
        const leaseB = await within(waiting, guardMs, "the waiter's grant");
        expect(leaseB.epoch).toBe(leaseA.epoch + 1n);
        await leaseB.release();
        await expect(leaseA.refresh()).rejects.toSatisfy((e) => hasCode(e, "lease_lost"));
        watch.close();
      } finally {
        await after();
      }
    });

    it("C3 release completes even with an aborted signal", async () => {
      const f = await fixture();
      try {
        const ids = { volumeId: uid("volume-canceled"), objectStoreId: "objects-canceled" };
        const leaseA = await acquired(f.first, { ...ids, participantId: "first" });
        await leaseA.release({ signal: AbortSignal.abort() });
        const leaseB = await f.second.tryAcquireWriteLease({ ...ids, participantId: "second" });
        expect(leaseB.acquired).toBe(true);
        await leaseB.lease?.release();
      } finally {
        await after();
      }
    });

    it("C4 try while held is a value, not an error", async () => {
      const f = await fixture();
      try {
        const ids = { volumeId: uid("volume-try"), objectStoreId: "objects-try" };
        const lease = await acquired(f.first, { ...ids, participantId: "first" });
        // The refusal names who holds the lease.
        expect(await f.second.tryAcquireWriteLease({ ...ids, participantId: "second" })).toEqual({
          acquired: false,
          lease: undefined,
          holder: "first",
        });
        // Not re-entrant: the holder's own participant is busy too.
        expect((await f.first.tryAcquireWriteLease({ ...ids, participantId: "first" })).acquired).toBe(false);
        await lease.release();
      } finally {
        await after();
      }
    });

    it("C5 done, signal and err after a clean release", async () => {
      const f = await fixture();
      try {
        const lease = await acquired(f.first, { volumeId: uid("volume-done"), objectStoreId: "o", participantId: "p" });
        expect(await settled(lease.done)).toBe(false);
        expect(lease.signal.aborted).toBe(false);
        expect(lease.err).toBeUndefined();
        await lease.release();
        await within(lease.done, guardMs, "done");
        expect(lease.signal.aborted).toBe(true);
        expect(lease.err).toBeUndefined();
        await lease.release(); // idempotent
      } finally {
        await after();
      }
    });

    it("listScopes yields every granted scope in UTF-8 byte order, following cursors (docs/protocol.md#operating-at-scale)", async () => {
      const f = await fixture();
      try {
        const volumeId = uid("volume-list");
        await acquired(f.first, { volumeId, objectStoreId: "b", participantId: "p" });
        const freed = await acquired(f.first, { volumeId, objectStoreId: "a", participantId: "p" });
        await freed.release();
        await acquired(f.first, { volumeId, key: "k", participantId: "p" });
        const expected = [
          ["", "k", true],
          ["a", "", false],
          ["b", "", true],
        ];
        // Over HTTP the index may lag by up to 2 s: poll for that long (the guarantee itself).
        const deadline = Date.now() + 2_500;
        let listed: unknown[][] = [];
        for (;;) {
          listed = [];
          for await (const s of f.second.listScopes({ volumeId }, { limit: 1 })) {
            listed.push([s.objectStoreId, s.key, s.held]);
          }
          if (JSON.stringify(listed) === JSON.stringify(expected) || Date.now() > deadline) break;
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
        expect(listed).toEqual(expected);
      } finally {
        await after();
      }
    });

    it("C6 keyed scopes exclude without colliding", async () => {
      const f = await fixture();
      try {
        const volumeId = uid("volume-keyed");
        const keyed: Scope = { volumeId, key: "world-1", participantId: "first" };
        expect((await f.first.capability(keyed)).supported).toBe(true);
        const keyedLease = await acquired(f.first, keyed);
        expect(await f.second.tryAcquireWriteLease({ volumeId, key: "world-1", participantId: "second" })).toEqual({
          acquired: false,
          lease: undefined,
          holder: "first",
        });
        const other = await acquired(f.second, { volumeId, key: "world-2", participantId: "second" });
        const store = await acquired(f.second, { volumeId, objectStoreId: "objects-keyed", participantId: "second" });
        const storeKeyed = await acquired(f.second, {
          volumeId,
          objectStoreId: "objects-keyed",
          key: "world-1",
          participantId: "second",
        });
        await keyedLease.release({ signal: AbortSignal.abort() });
        await within(keyedLease.done, guardMs, "done");
        expect(keyedLease.err).toBeUndefined();
        const again = await acquired(f.second, { volumeId, key: "world-1", participantId: "second" });
        for (const l of [other, store, storeKeyed, again]) await l.release();
      } finally {
        await after();
      }
    });

    it("C7 keyed scopes have no generations: snapshot, watch, refresh, publish unsupported", async () => {
      const f = await fixture();
      try {
        const keyed: Scope = { volumeId: uid("volume-keyed-generation"), key: "world-1", participantId: "first" };
        const cap = await f.first.capability(keyed);
        expect(cap.generations).toBe(false);
        expect(cap.generation).toBe(0n);
        const lease = await acquired(f.first, keyed);
        const unsupported = (e: unknown): boolean => hasCode(e, "unsupported");
        await expect(lease.refresh()).rejects.toSatisfy(unsupported);
        await expect(lease.publish({})).rejects.toSatisfy(unsupported);
        await expect(f.second.snapshot(keyed)).rejects.toSatisfy(unsupported);
        await expect(f.second.watch(keyed, 0n)).rejects.toSatisfy(unsupported);
        await lease.release();
      } finally {
        await after();
      }
    });

    it("C8 UnsupportedCoordinator reports the fallback and rejects the rest", async () => {
      const c = new UnsupportedCoordinator({ backend: "unsupported", reason: "unsupported" });
      const scope: Scope = { volumeId: "volume-a", objectStoreId: "objects", participantId: "reader" };
      expect(await c.capability(scope)).toEqual({
        supported: false,
        backend: "unsupported",
        volumeId: "volume-a",
        objectStoreId: "objects",
        generation: 0n,
        generations: false,
        detectsLoss: false,
        fallbackReason: "unsupported",
      });
      const unsupported = (e: unknown): boolean => hasCode(e, "unsupported");
      await expect(c.snapshot(scope)).rejects.toSatisfy(unsupported);
      await expect(c.watch(scope, 0n)).rejects.toSatisfy(unsupported);
      await expect(c.tryAcquireWriteLease(scope)).rejects.toSatisfy(unsupported);
      await expect(c.waitAcquireWriteLease(scope)).rejects.toSatisfy(unsupported);
      const blank = new UnsupportedCoordinator();
      expect((await blank.capability(scope)).fallbackReason).toBe("unsupported");
    });

    it("detected loss: a lease ended behind the holder's back fires done/signal with err, release stays clean", async () => {
      const f = await fixture();
      try {
        const scope: Scope = { volumeId: uid("volume-loss"), objectStoreId: "objects", participantId: "holder" };
        expect((await f.first.capability(scope)).detectsLoss).toBe(true);
        const lease = await acquired(f.first, scope, hooks.shortTtlMs);
        expect(await settled(lease.done)).toBe(false);
        expect(lease.err).toBeUndefined();
        await hooks.revoke(f, scope, lease.leaseId);
        await hooks.elapse(f, hooks.shortTtlMs);
        await within(lease.done, guardMs, "loss");
        expect(lease.signal.aborted).toBe(true);
        expect(lease.err).toBeInstanceOf(ShiftlockError);
        expect(hasCode(lease.err, "lease_lost")).toBe(true);
        await expect(lease.publish({})).rejects.toSatisfy((e) => hasCode(e, "lease_lost"));
        await lease.release();
        expect(hasCode(lease.err, "lease_lost")).toBe(true);
        const next = await acquired(f.second, { ...scope, participantId: "next" });
        expect(next.epoch).toBe(lease.epoch + 1n);
        await next.release();
      } finally {
        await after();
      }
    });

    it("keepalive keeps a lease across several ttls", async () => {
      const f = await fixture();
      try {
        const scope: Scope = { volumeId: uid("volume-keepalive"), objectStoreId: "objects", participantId: "holder" };
        const lease = await acquired(f.first, scope, hooks.shortTtlMs);
        await hooks.elapse(f, hooks.shortTtlMs * 3);
        expect(lease.err).toBeUndefined();
        expect(await settled(lease.done)).toBe(false);
        expect((await lease.refresh()).generation).toBe(0n);
        expect((await f.second.tryAcquireWriteLease({ ...scope, participantId: "other" })).acquired).toBe(false);
        await lease.release();
      } finally {
        await after();
      }
    });

    it("waiters are granted in arrival order, with strictly increasing epochs", async () => {
      const f = await fixture();
      try {
        const ids = { volumeId: uid("volume-fifo"), objectStoreId: "objects" };
        const watch = await f.second.watch({ ...ids, participantId: "w" }, 0n);
        const a = await acquired(f.first, { ...ids, participantId: "a" });
        const order: string[] = [];
        const waiter = async (c: Coordinator, p: string): Promise<WriteLease> => {
          const l = await c.waitAcquireWriteLease({ ...ids, participantId: p });
          order.push(p);
          return l;
        };
        const pb = waiter(f.second, "b");
        await eventWhere(watch, (e) => e.wantLock && e.processId === "b", "b queued");
        const pc = waiter(f.first, "c");
        await eventWhere(watch, (e) => e.wantLock && e.processId === "c", "c queued");
        const pd = waiter(f.second, "d");
        await eventWhere(watch, (e) => e.wantLock && e.processId === "d", "d queued");
        await a.release();
        const b = await within(pb, guardMs, "b's grant");
        expect(await settled(pc)).toBe(false);
        await b.release();
        const c = await within(pc, guardMs, "c's grant");
        await c.release();
        const d = await within(pd, guardMs, "d's grant");
        await d.release();
        expect(order).toEqual(["b", "c", "d"]);
        expect([b.epoch - a.epoch, c.epoch - b.epoch, d.epoch - c.epoch]).toEqual([1n, 1n, 1n]);
        watch.close();
      } finally {
        await after();
      }
    });

    it("waitMs passing is lease_held", async () => {
      const f = await fixture();
      try {
        const ids = { volumeId: uid("volume-waitms"), objectStoreId: "objects" };
        const watch = await f.second.watch({ ...ids, participantId: "w" }, 0n);
        const a = await acquired(f.first, { ...ids, participantId: "a" });
        const timed = f.second.waitAcquireWriteLease({ ...ids, participantId: "timed" }, { waitMs: 200 });
        const timedOutcome = timed.then(
          () => "granted",
          (e: unknown) => e,
        );
        await eventWhere(watch, (e) => e.wantLock && e.processId === "timed", "timed queued");
        await hooks.elapse(f, 300);
        const outcome = await within(timedOutcome, guardMs, "the timeout");
        expect(hasCode(outcome, "lease_held")).toBe(true);
        expect(hasCode(outcome, "lease_held") && outcome.details["holder"]).toBe("a"); // names who holds it

        await a.release();
        watch.close();
      } finally {
        await after();
      }
    });

    it("an aborted wait leaves the queue: the next waiter is granted directly", async () => {
      const f = await fixture();
      try {
        const ids = { volumeId: uid("volume-abort"), objectStoreId: "objects" };
        const watch = await f.second.watch({ ...ids, participantId: "w" }, 0n);
        const a = await acquired(f.first, { ...ids, participantId: "a" });
        const ctl = new AbortController();
        const aborted = f.second.waitAcquireWriteLease({ ...ids, participantId: "gone" }, { signal: ctl.signal });
        const abortedOutcome = aborted.then(
          () => "granted",
          (e: unknown) => e,
        );
        await eventWhere(watch, (e) => e.wantLock && e.processId === "gone", "gone queued");
        ctl.abort(new Error("caller went away"));
        expect(await within(abortedOutcome, guardMs, "the abort")).toMatchObject({ message: "caller went away" });

        const pc = f.first.waitAcquireWriteLease({ ...ids, participantId: "c" });
        await eventWhere(watch, (e) => e.wantLock && e.processId === "c", "c queued");
        await a.release();
        const c = await within(pc, guardMs, "c's grant");
        // Nobody was granted in between: the aborted waiter left the queue.
        expect(c.epoch).toBe(a.epoch + 1n);
        await c.release();
        watch.close();
      } finally {
        await after();
      }
    });

    it("the holder hears wantLock through its keepalive", async () => {
      const f = await fixture();
      try {
        const ids = { volumeId: uid("volume-wantlock"), objectStoreId: "objects" };
        let heard = 0;
        const res = await f.first.tryAcquireWriteLease(
          { ...ids, participantId: "a" },
          { ttlMs: hooks.shortTtlMs, onWantLock: () => heard++ },
        );
        if (!res.acquired) throw new Error("busy");
        const a = res.lease;
        expect(a.wantLock).toBe(false);
        const pb = f.second.waitAcquireWriteLease({ ...ids, participantId: "b" });
        await hooks.elapse(f, Math.ceil(hooks.shortTtlMs / 2));
        expect(a.wantLock).toBe(true);
        expect(heard).toBeGreaterThan(0);
        await a.release();
        await (await within(pb, guardMs, "b's grant")).release();
      } finally {
        await after();
      }
    });

    it("publish: CAS refuses a stale expectedGeneration; generation jumps forward, never back", async () => {
      const f = await fixture();
      try {
        const scope: Scope = { volumeId: uid("volume-cas"), objectStoreId: "objects", participantId: "w" };
        const lease = await acquired(f.first, scope);
        expect((await lease.publish({ expectedGeneration: 0n, root: "r1" })).generation).toBe(1n);
        await expect(lease.publish({ expectedGeneration: 0n, root: "stale" })).rejects.toSatisfy((e) =>
          hasCode(e, "stale_generation"),
        );
        expect(await lease.refresh()).toMatchObject({ generation: 1n, root: "r1" });
        expect((await lease.publish({ generation: 10n })).generation).toBe(10n);
        const back = await lease.publish({ generation: 3n, keyPrefixChanged: bytes("p/") });
        expect(back).toMatchObject({ generation: 11n, root: "r1" });
        expect((await lease.publish({ root: null })).root).toBeNull();
        await lease.release();
        await expect(lease.publish({})).rejects.toSatisfy((e) => hasCode(e, "lease_lost"));
        await expect(lease.refresh()).rejects.toSatisfy((e) => hasCode(e, "lease_lost"));
        expect((await f.second.snapshot(scope)).generation).toBe(12n);
      } finally {
        await after();
      }
    });

    it("watch replays every publish after a generation, in order, then goes live", async () => {
      const f = await fixture();
      try {
        const scope: Scope = { volumeId: uid("volume-replay"), objectStoreId: "objects", participantId: "w" };
        const lease = await acquired(f.first, scope);
        for (let i = 1; i <= 3; i++) await lease.publish({ root: { n: i }, keyPrefixChanged: bytes(`k${i}/`) });
        const watch = await f.second.watch({ ...scope, participantId: "r" }, 1n);
        const e2 = await nextEvent(watch, "replay of 2");
        const e3 = await nextEvent(watch, "replay of 3");
        expect([e2.generation, e3.generation]).toEqual([2n, 3n]);
        expect([e2.rootChanged, e3.rootChanged]).toEqual([{ n: 2 }, { n: 3 }]);
        expect(e3.keyPrefixChanged).toEqual(bytes("k3/"));
        const current = await f.second.watch({ ...scope, participantId: "r" }, 3n);
        await lease.publish({ root: { n: 4 } });
        expect((await nextEvent(watch, "live 4")).generation).toBe(4n);
        const live = await nextEvent(current, "live 4 on the up-to-date watch");
        expect(live).toMatchObject({ generation: 4n, rootChanged: { n: 4 }, processId: "w" });
        expect(live.keyPrefixChanged).toBeUndefined();
        expect(current.afterGeneration).toBe(4n);
        await lease.release();
        const unlocked = await nextEvent(current, "unlocked");
        expect(unlocked).toMatchObject({ unlocked: true, processId: "w", generation: 4n });
        expect(unlocked.expired).toBeFalsy();
        watch.close();
        current.close();
      } finally {
        await after();
      }
    });

    it("scope with neither store nor key is scope-empty; bad names are invalid_request", async () => {
      const f = await fixture();
      try {
        const empty: Scope = { volumeId: uid("volume-empty"), participantId: "p" };
        await expect(f.first.tryAcquireWriteLease(empty)).rejects.toSatisfy(isScopeEmpty);
        await expect(f.first.waitAcquireWriteLease(empty)).rejects.toSatisfy(isScopeEmpty);
        await expect(f.first.snapshot(empty)).rejects.toSatisfy(isScopeEmpty);
        await expect(
          f.first.tryAcquireWriteLease({ volumeId: "v", objectStoreId: "o", participantId: "" }),
        ).rejects.toSatisfy((e) => hasCode(e, "invalid_request"));
        await expect(
          f.first.tryAcquireWriteLease({ volumeId: "v", objectStoreId: "o", participantId: "p" }, { ttlMs: 5 }),
        ).rejects.toSatisfy((e) => hasCode(e, "invalid_request"));
      } finally {
        await after();
      }
    });

    it("evict: the holder's lease ends, the next waiter is granted with the next epoch, watchers hear evicted + note", async () => {
      const f = await fixture();
      try {
        const ids = { volumeId: uid("volume-evict"), objectStoreId: "objects-evict" };
        const holder: Scope = { ...ids, participantId: "stuck" };
        const waiter: Scope = { ...ids, participantId: "next" };
        const watch = await f.second.watch(waiter, 0n);
        const lease = await acquired(f.first, holder);
        await lease.publish({ root: { v: 1 } });
        const waiting = f.second.waitAcquireWriteLease(waiter);
        await eventWhere(watch, (e) => e.wantLock, "wantLock");
        const snap = await f.operator.evict({ ...ids, participantId: "" }, { note: "stuck writer, INC-7" });
        expect(snap).toEqual({ ...ids, generation: 1n, root: { v: 1 } });
        const unlocked = await eventWhere(watch, (e) => e.unlocked, "the evicted unlock");
        expect(unlocked).toMatchObject({
          processId: "stuck",
          unlocked: true,
          evicted: true,
          note: "stuck writer, INC-7",
        });
        expect(unlocked.expired).toBeUndefined();
        const next = await within(waiting, guardMs, "the waiter's grant");
        expect(next.epoch).toBe(lease.epoch + 1n);
        // The evicted holder hears it on its next call (publish here; keepalive detects it too).
        await expect(lease.publish({ root: { v: 2 } })).rejects.toSatisfy((e) => hasCode(e, "lease_lost"));
        await expect(lease.refresh()).rejects.toSatisfy((e) => hasCode(e, "lease_lost"));
        expect((await f.second.snapshot(waiter)).root).toEqual({ v: 1 });
        await lease.release(); // clean: the server's release is idempotent
        await next.release();
        watch.close();
      } finally {
        await after();
      }
    });

    it("evict: the holder's keepalive detects it as a loss; a free scope is left as it is", async () => {
      const f = await fixture();
      try {
        const scope: Scope = { volumeId: uid("volume-evict-loss"), objectStoreId: "objects", participantId: "holder" };
        const lease = await acquired(f.first, scope, hooks.shortTtlMs);
        await f.operator.evict(scope);
        await hooks.elapse(f, hooks.shortTtlMs);
        await within(lease.done, guardMs, "loss");
        expect(hasCode(lease.err, "lease_lost")).toBe(true);
        // Free now: evicting again changes nothing (same snapshot, the next grant is epoch+1).
        expect(await f.operator.evict(scope, { note: "again" })).toEqual({
          volumeId: scope.volumeId,
          objectStoreId: "objects",
          generation: 0n,
          root: null,
        });
        const next = await acquired(f.second, { ...scope, participantId: "next" });
        expect(next.epoch).toBe(lease.epoch + 1n);
        await next.release();
      } finally {
        await after();
      }
    });

    it("evict: keyed scopes too (their snapshot has generation 0 and root null); notes over 256 bytes are refused", async () => {
      const f = await fixture();
      try {
        const scope: Scope = { volumeId: uid("volume-evict-key"), key: "k", participantId: "holder" };
        const lease = await acquired(f.first, scope);
        const tooLong = "é".repeat(129); // 258 bytes of UTF-8
        await expect(f.operator.evict(scope, { note: tooLong })).rejects.toSatisfy((e) =>
          hasCode(e, "invalid_request"),
        );
        expect(await f.operator.evict(scope, { note: "é".repeat(128) })).toEqual({
          volumeId: scope.volumeId,
          objectStoreId: "",
          generation: 0n,
          root: null,
        });
        const next = await acquired(f.second, { ...scope, participantId: "next" });
        expect(next.epoch).toBe(lease.epoch + 1n);
        await next.release();
        await lease.release();
      } finally {
        await after();
      }
    });

    it("names with slashes and unicode address distinct scopes", async () => {
      const f = await fixture();
      try {
        const volumeId = uid("vol/ume é");
        const a = await acquired(f.first, { volumeId, objectStoreId: "a/b", participantId: "p/1" });
        const b = await acquired(f.second, { volumeId, objectStoreId: "a", key: "b", participantId: "p/2" });
        expect(a.scope.objectStoreId).toBe("a/b");
        expect((await a.publish({ root: "x" })).objectStoreId).toBe("a/b");
        expect((await f.second.snapshot({ volumeId, objectStoreId: "a/b", participantId: "" })).root).toBe("x");
        await a.release();
        await b.release();
      } finally {
        await after();
      }
    });
  });
}
