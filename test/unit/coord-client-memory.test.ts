// MemoryCoordinator specifics beyond the conformance suite: clock-driven timeouts, the
// truncated-history replay, value isolation, request validation and revokeLease.
import { describe, expect, it } from "vitest";
import { ManualClock } from "../../src/core/clock.ts";
import { hasCode } from "../../src/protocol/errors.ts";
import { MemoryCoordinator } from "../../src/client/coord/memory-coord.ts";
import type { CoordEvent, Scope } from "../../src/client/coord/coord-types.ts";

const scope = (participantId: string): Scope => ({ volumeId: "v", objectStoreId: "o", participantId });

function setup(historyLimit?: number) {
  const clock = new ManualClock();
  const coord = new MemoryCoordinator({ clock, ...(historyLimit === undefined ? {} : { historyLimit }) });
  return { clock, coord };
}

describe("MemoryCoordinator", () => {
  it("reports itself as in-memory, detecting loss", async () => {
    const { coord } = setup();
    expect(await coord.capability(scope("p"))).toMatchObject({
      backend: "in-memory",
      detectsLoss: true,
      generations: true,
    });
    expect(await coord.capability({ volumeId: "v", key: "k", participantId: "p" })).toMatchObject({
      generations: false,
    });
    coord.close();
  });

  it("times a waiter out exactly at waitMs on the injected clock", async () => {
    const { clock, coord } = setup();
    const held = await coord.tryAcquireWriteLease(scope("a"));
    let outcome: unknown = "pending";
    coord.waitAcquireWriteLease(scope("b"), { waitMs: 1_000 }).then(
      () => (outcome = "granted"),
      (e: unknown) => (outcome = e),
    );
    await clock.advance(999);
    expect(outcome).toBe("pending");
    await clock.advance(1);
    expect(hasCode(outcome, "lease_held")).toBe(true);
    await held.lease?.release();
    coord.close();
  });

  it("revokeLease is noticed at the next keepalive (the docs example)", async () => {
    const { clock, coord } = setup();
    const { lease } = await coord.tryAcquireWriteLease(scope("me"));
    coord.revokeLease(scope("x"), lease!.leaseId);
    await clock.advance(15_000 / 3);
    expect(lease!.signal.aborted).toBe(true);
    expect(hasCode(lease!.err, "lease_lost")).toBe(true);
    coord.close();
  });

  it("replays one catch-up event when history no longer reaches afterGeneration", async () => {
    const { coord } = setup(2);
    const { lease } = await coord.tryAcquireWriteLease(scope("w"));
    for (let i = 1; i <= 5; i++) {
      await lease!.publish({ root: { n: i }, ...(i === 3 ? { keyPrefixChanged: new Uint8Array([1, 2]) } : {}) });
    }
    const truncated = await coord.watch(scope("r"), 1n);
    const first = await truncated[Symbol.asyncIterator]().next();
    const e = first.value as CoordEvent;
    expect(e).toMatchObject({ replay: true, generation: 5n, rootChanged: { n: 5 }, processId: "" });
    expect(e.keyPrefixChanged).toEqual(new Uint8Array([1, 2]));
    // History reaching back: the retained publishes themselves.
    const reaching = await coord.watch(scope("r"), 3n);
    const it = reaching[Symbol.asyncIterator]();
    expect(((await it.next()).value as CoordEvent).generation).toBe(4n);
    expect(((await it.next()).value as CoordEvent).replay).toBeUndefined();
    truncated.close();
    reaching.close();
    coord.close();
  });

  it("copies roots in and out: callers cannot alias the stored value", async () => {
    const { coord } = setup();
    const { lease } = await coord.tryAcquireWriteLease(scope("w"));
    const root = { list: [1] };
    await lease!.publish({ root });
    root.list.push(2);
    const snap = await coord.snapshot(scope("r"));
    expect(snap.root).toEqual({ list: [1] });
    (snap.root as { list: number[] }).list.push(3);
    expect((await coord.snapshot(scope("r"))).root).toEqual({ list: [1] });
    coord.close();
  });

  it("validates like the server: root size, ttl range, waitMs range", async () => {
    const { coord } = setup();
    const { lease } = await coord.tryAcquireWriteLease(scope("w"));
    await expect(lease!.publish({ root: "x".repeat(16 * 1024) })).rejects.toMatchObject({
      code: "invalid_request",
      details: { field: "root" },
    });
    await expect(coord.tryAcquireWriteLease(scope("a"), { ttlMs: 86_400_001 })).rejects.toMatchObject({
      details: { field: "ttlMs" },
    });
    await expect(coord.waitAcquireWriteLease(scope("a"), { waitMs: -1 })).rejects.toMatchObject({
      details: { field: "waitMs" },
    });
    coord.close();
  });
});
