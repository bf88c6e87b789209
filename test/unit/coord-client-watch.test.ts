// HttpCoordinator.watch against a fake WebSocket (the test plays the server) and a
// ManualClock for pings and reconnect backoff: ready, decoding, resume after drops and
// 4008, de-duplication of replays, permanent refusals, close and abort.
import { describe, expect, it } from "vitest";
import { ManualClock, flushMicrotasks } from "../../src/core/clock.ts";
import { hasCode } from "../../src/protocol/errors.ts";
import { HttpCoordinator } from "../../src/client/coord/coord-http.ts";
import type { CoordEvent, CoordWatch, Scope } from "../../src/client/coord/coord-types.ts";
import {
  CAPABILITY,
  envelope,
  fakeFetch,
  fakeWebSocket,
  json,
  wireEvent,
  type FakeSocket,
} from "./coord-client-fakes.ts";

const scope: Scope = { volumeId: "v", objectStoreId: "o", participantId: "r" };

function setup(probe: () => Response = () => json(200, CAPABILITY), auth?: "subprotocol") {
  const clock = new ManualClock();
  const { Ctor, sockets } = fakeWebSocket();
  const { fetch, calls } = fakeFetch(probe);
  const coord = new HttpCoordinator({
    baseUrl: "http://svc.test",
    token: "tok",
    namespace: "ns 1",
    fetch,
    WebSocket: Ctor,
    clock,
    watchPingIntervalMs: 1_000,
    watchReconnectMinMs: 100,
    watchReconnectMaxMs: 1_000,
    ...(auth === undefined ? {} : { webSocketAuth: auth }),
  });
  return { clock, sockets, calls, coord };
}

async function ready(sockets: FakeSocket[], index: number, generation = 0): Promise<FakeSocket> {
  await flushMicrotasks();
  const socket = sockets[index];
  if (socket === undefined) throw new Error(`socket ${index} was not opened`);
  socket.open();
  socket.message({ type: "ready", generation: String(generation) });
  await flushMicrotasks();
  return socket;
}

/** Advance in small steps so timers armed by async continuations still fire in order. */
async function tick(clock: ManualClock, ms: number): Promise<void> {
  for (let left = ms; left > 0; left -= 10) {
    await flushMicrotasks();
    await clock.advance(Math.min(10, left));
  }
}

function reader(watch: CoordWatch): { events: CoordEvent[]; error: () => unknown } {
  const events: CoordEvent[] = [];
  let error: unknown;
  void (async () => {
    try {
      for await (const e of watch) events.push(e);
    } catch (err) {
      error = err;
    }
  })();
  return { events, error: () => error };
}

describe("HttpCoordinator.watch", () => {
  it("resolves on ready, then yields decoded events in order", async () => {
    const { sockets, coord } = setup();
    const pending = coord.watch(scope, 5n);
    const socket = await ready(sockets, 0, 7);
    const watch = await pending;
    expect(socket.url).toBe("ws://svc.test/v1/ns/ns%201/volumes/v/stores/o/watch?afterGeneration=5");
    expect(socket.options?.headers).toEqual({ Authorization: "Bearer tok" });
    const r = reader(watch);
    socket.message(wireEvent(6, { keyPrefixChanged: btoa("world-head/") }));
    socket.message(wireEvent(7, { rootChanged: null }));
    socket.message(wireEvent(7, { wantLock: true, rootChanged: null, processId: "b" }));
    await flushMicrotasks();
    expect(r.events.map((e) => e.generation)).toEqual([6n, 7n, 7n]);
    expect(r.events[0]!.rootChanged).toEqual({ g: 6 });
    expect(new TextDecoder().decode(r.events[0]!.keyPrefixChanged)).toBe("world-head/");
    expect(r.events[1]!.rootChanged).toBeUndefined();
    expect(r.events[2]).toMatchObject({ wantLock: true, processId: "b" });
    expect(watch.afterGeneration).toBe(7n);
    watch.close();
  });

  it("after a drop, reconnects from the last generation seen and drops replayed duplicates", async () => {
    const { clock, sockets, coord } = setup();
    const pending = coord.watch(scope, 0n);
    const first = await ready(sockets, 0);
    const watch = await pending;
    const r = reader(watch);
    first.message(wireEvent(1));
    first.message(wireEvent(2));
    await tick(clock, 100);
    first.drop();
    await flushMicrotasks();
    expect(sockets).toHaveLength(2);
    expect(sockets[1]!.url).toMatch(/afterGeneration=2$/);
    const second = await ready(sockets, 1, 4);
    second.message(wireEvent(2)); // a replay we already had
    second.message(wireEvent(3));
    second.message(wireEvent(4));
    second.message(wireEvent(4, { unlocked: true, rootChanged: null }));
    await flushMicrotasks();
    // After the reconnect, first the stand-in for hints the gap may have swallowed (see below).
    expect(r.events.map((e) => [e.generation, e.unlocked, e.resumed === true])).toEqual([
      [1n, false, false],
      [2n, false, false],
      [2n, true, true],
      [3n, false, false],
      [4n, false, false],
      [4n, true, false],
    ]);
    watch.close();
  });

  it("a 4008 close (too slow) resumes the same way, once the consumer took what is buffered", async () => {
    const { clock, sockets, coord } = setup();
    const pending = coord.watch(scope, 0n);
    const first = await ready(sockets, 0);
    const watch = await pending;
    first.message(wireEvent(9));
    await tick(clock, 100);
    first.drop(4008);
    await tick(clock, 5_000);
    expect(sockets).toHaveLength(1); // one unread event: reconnecting now would only pile up more
    const it = watch[Symbol.asyncIterator]();
    expect((await it.next()).value?.generation).toBe(9n);
    await flushMicrotasks();
    expect(sockets[1]!.url).toMatch(/afterGeneration=9$/);
    watch.close();
  });

  it("a refused first connection rejects with the server's error (probe), without retrying", async () => {
    const { clock, sockets, coord } = setup(() => envelope(401, "unauthorized"));
    const pending = coord.watch(scope, 0n);
    await flushMicrotasks();
    sockets[0]!.drop();
    await expect(pending).rejects.toSatisfy((e) => hasCode(e, "unauthorized"));
    await clock.advance(10_000);
    expect(sockets).toHaveLength(1);
  });

  it("a first connection that keeps failing gives up after three tries with a network error", async () => {
    const { clock, sockets, coord } = setup();
    const pending = coord.watch(scope, 0n);
    const outcome = pending.then(
      () => "resolved",
      (e: unknown) => e,
    );
    for (let i = 0; i < 3; i++) {
      await flushMicrotasks();
      sockets[i]?.drop();
      await tick(clock, 1_000);
    }
    const err = await outcome;
    expect(hasCode(err, "internal")).toBe(true);
    expect(sockets).toHaveLength(3);
  });

  it("pings while alive and replaces a connection that went silent", async () => {
    const { clock, sockets, coord } = setup();
    const pending = coord.watch(scope, 0n);
    const socket = await ready(sockets, 0);
    const watch = await pending;
    await clock.advance(1_000);
    expect(socket.sent).toEqual(['{"type":"ping"}']);
    await clock.advance(1_000); // no pong for a whole interval
    expect(socket.closedByClient).toBeDefined();
    await tick(clock, 1_000);
    expect(sockets).toHaveLength(2);
    watch.close();
  });

  it("close() ends the iteration and the socket; abort ends it with the reason", async () => {
    const { clock, sockets, coord } = setup();
    const pending = coord.watch(scope, 0n);
    const socket = await ready(sockets, 0);
    const watch = await pending;
    const r = reader(watch);
    watch.close();
    await flushMicrotasks();
    expect(socket.closedByClient?.code).toBe(1000);
    await clock.advance(10_000);
    expect(sockets).toHaveLength(1);
    expect(r.error()).toBeUndefined();

    const ctl = new AbortController();
    const pending2 = coord.watch(scope, 0n, { signal: ctl.signal });
    await ready(sockets, 1);
    const r2 = reader(await pending2);
    ctl.abort(new Error("bye"));
    await flushMicrotasks();
    expect((r2.error() as Error).message).toBe("bye");
  });

  it("resuming past the server's generation falls back to the server's", async () => {
    const { sockets, coord } = setup();
    const pending = coord.watch(scope, 50n);
    const socket = await ready(sockets, 0, 3);
    const watch = await pending;
    const r = reader(watch);
    socket.message(wireEvent(4));
    await flushMicrotasks();
    expect(r.events.map((e) => e.generation)).toEqual([4n]);
    watch.close();
  });

  it("keyed scopes are unsupported without connecting; browsers authenticate by subprotocol", async () => {
    const { sockets, coord } = setup(undefined, "subprotocol");
    await expect(coord.watch({ volumeId: "v", key: "k", participantId: "r" }, 0n)).rejects.toSatisfy((e) =>
      hasCode(e, "unsupported"),
    );
    expect(sockets).toHaveLength(0);
    const pending = coord.watch({ volumeId: "v/1", objectStoreId: "o", participantId: "r" }, 0n);
    const socket = await ready(sockets, 0);
    expect(socket.protocols).toEqual(["shiftlock.bearer.tok"]);
    expect(socket.url).toContain("/volumes/v%2F1/stores/o/watch");
    (await pending).close();
  });
});

describe("HttpCoordinator.watch flow control and hints (docs/protocol.md#watch-flow-control)", () => {
  const acks = (socket: FakeSocket): unknown[] =>
    socket.sent.map((text) => JSON.parse(text) as { type: string }).filter((m) => m.type === "ack");

  it("acknowledges processed events with the count since the last ack, so a steady reader never owes 1,024", async () => {
    const { sockets, coord } = setup();
    const pending = coord.watch(scope, 0n);
    const socket = await ready(sockets, 0);
    const it = (await pending)[Symbol.asyncIterator]();
    // Play the server: it closes a socket owing 1,024 unacknowledged events (docs/protocol.md#watch-flow-control).
    let sent = 0;
    let acked = 0;
    let worst = 0;
    for (let g = 1; g <= 3_000; g++) {
      socket.message(wireEvent(g));
      sent++;
      expect((await it.next()).value?.generation).toBe(BigInt(g));
      acked = acks(socket).reduce<number>((sum, a) => sum + (a as { count: number }).count, 0);
      worst = Math.max(worst, sent - acked);
    }
    expect(worst).toBeLessThan(1_024);
    // Each ack counts only what was processed since the previous one (not a running total).
    expect(new Set(acks(socket).map((a) => (a as { count: number }).count))).toEqual(new Set([128]));
    expect(socket.closedByClient).toBeUndefined();
  });

  it("acknowledges only what the consumer took, not what merely arrived", async () => {
    const { sockets, coord } = setup();
    const pending = coord.watch(scope, 0n);
    const socket = await ready(sockets, 0);
    const it = (await pending)[Symbol.asyncIterator]();
    for (let g = 1; g <= 300; g++) socket.message(wireEvent(g));
    expect(acks(socket)).toEqual([]);
    for (let i = 0; i < 256; i++) await it.next();
    expect(acks(socket)).toEqual([
      { type: "ack", count: 128 },
      { type: "ack", count: 128 },
    ]);
  });

  it("a reconnect surfaces one synthetic wantLock+unlocked hint: those events are not replayed", async () => {
    const { clock, sockets, coord } = setup();
    const pending = coord.watch(scope, 0n);
    const first = await ready(sockets, 0);
    const watch = await pending;
    const r = reader(watch);
    first.message(wireEvent(1));
    await tick(clock, 100);
    first.drop(); // a waiter's wantLock or a release may happen now: the server keeps no record of it
    await flushMicrotasks();
    const second = await ready(sockets, 1, 2);
    second.message(wireEvent(2));
    await flushMicrotasks();
    expect(r.events.map((e) => [e.generation, e.wantLock, e.unlocked, e.resumed === true])).toEqual([
      [1n, false, false, false],
      [1n, true, true, true],
      [2n, false, false, false],
    ]);
    expect(r.events[1]).toMatchObject({ processId: "", rootChanged: undefined, keyPrefixChanged: undefined });
    watch.close();
  });
});
