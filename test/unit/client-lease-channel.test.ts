// The lease channel's client (src/client/claims/lease-channel.ts) over HttpClaimsBackend, a
// scripted WebSocket and a manual clock: each confirmation carries the time its keepalive was
// sent (the opening: when the connection was asked for; a pong: its ping), `ended` is the
// channel's last item (the socket dropped, no reconnect that would start a new epoch), and
// without a WebSocket constructor there is no channel.
import { describe, expect, it } from "vitest";
import type { LeaseChannelItem } from "../../src/client/claims/claims-backend.ts";
import { HttpClaimsBackend } from "../../src/client/claims/http-claims-backend.ts";
import { ManualClock, flushMicrotasks } from "../../src/core/clock.ts";
import { generationToWire, type GenerationRecord } from "../../src/protocol/generations.ts";
import { WATCH_PING_TEXT } from "../../src/protocol/watch.ts";
import { fakeWebSocket } from "./coord-client-fakes.ts";

const T0 = 1_000_000;

function record(leaseEpoch: bigint): GenerationRecord {
  return {
    id: "g-1",
    service: "svc",
    instanceId: "i",
    state: "active",
    startedAtMs: T0,
    updatedAtMs: T0,
    reason: "",
    leaseExpiresAtMs: T0 + 3_000,
    leaseEpoch,
  };
}

function setup() {
  const clock = new ManualClock(T0);
  const { Ctor, sockets } = fakeWebSocket();
  const backend = new HttpClaimsBackend({
    baseUrl: "http://svc.test",
    token: "tok",
    namespace: "ns",
    fetch: () => Promise.resolve(Response.json({ generation: generationToWire(record(1n)) })),
    WebSocket: Ctor,
    clock,
  });
  const channel = backend.openLeaseChannel("g-1", { ttlMs: 3_000, pingIntervalMs: 1_000 })!;
  const items = channel[Symbol.asyncIterator]();
  const next = async (): Promise<LeaseChannelItem | undefined> => {
    const r = await items.next();
    return r.done === true ? undefined : r.value;
  };
  return { clock, sockets, channel, next };
}

describe("the lease channel client", () => {
  it("times the opening by when the connection was asked for, and each pong by its own ping", async () => {
    const { clock, sockets, channel, next } = setup();
    const socket = sockets[0]!;
    expect(socket.url).toBe("ws://svc.test/v1/ns/ns/generations/g-1/lease?ttlMs=3000");
    expect(socket.options?.headers?.["Authorization"]).toBe("Bearer tok");
    await clock.advance(30); // the handshake takes 30 ms
    socket.open();
    socket.message({ type: "generation", generation: generationToWire(record(4n)) });
    expect(await next()).toMatchObject({ type: "opened", sentAtMs: T0, receivedAtMs: T0 + 30 });
    await clock.advance(1_000);
    expect(socket.sent).toEqual([WATCH_PING_TEXT]);
    await clock.advance(200); // the pong takes 200 ms
    socket.message({ type: "pong" });
    expect(await next()).toEqual({ type: "pong", leaseEpoch: 4n, sentAtMs: T0 + 1_030, receivedAtMs: T0 + 1_230 });
    await clock.advance(800);
    socket.message({ type: "pong" });
    socket.message({ type: "pong" }); // answers no ping: nothing to count
    socket.message({ type: "lease", leaseEpoch: "4", leaseExpiresAtMs: T0 + 5_000 });
    expect(await next()).toMatchObject({ type: "pong", sentAtMs: T0 + 2_030, receivedAtMs: T0 + 2_030 });
    expect(await next()).toMatchObject({ type: "lease", leaseEpoch: 4n, leaseExpiresAtMs: T0 + 5_000 });
    channel.close();
    expect(await next()).toBeUndefined();
  });

  it("ended is the last item: the socket is dropped at once and the channel ends without reconnecting", async () => {
    const { clock, sockets, channel, next } = setup();
    sockets[0]!.open();
    sockets[0]!.message({ type: "generation", generation: generationToWire(record(2n)) });
    sockets[0]!.message({ type: "ended", leaseEpoch: "2", reason: "ended" });
    expect(await next()).toMatchObject({ type: "opened" });
    expect(await next()).toMatchObject({ type: "ended", leaseEpoch: 2n, reason: "ended" });
    expect(sockets[0]!.terminated).toBe(true);
    expect(await next()).toBeUndefined();
    await clock.advance(10_000);
    await flushMicrotasks();
    expect(sockets).toHaveLength(1);
    expect(channel.ended).toBe(true);
  });

  it("a dropped connection reconnects, and the new opening is timed from its own request", async () => {
    const { clock, sockets, next } = setup();
    sockets[0]!.open();
    sockets[0]!.message({ type: "generation", generation: generationToWire(record(1n)) });
    await next();
    await clock.advance(500);
    sockets[0]!.drop();
    await clock.advance(1_000); // through the reconnect backoff
    expect(sockets).toHaveLength(2);
    const askedAtMs = clock.nowMs();
    await clock.advance(40);
    sockets[1]!.open();
    sockets[1]!.message({ type: "generation", generation: generationToWire(record(1n)) });
    const opened = await next();
    expect(opened).toMatchObject({ type: "opened", receivedAtMs: askedAtMs + 40 });
    expect((opened as { sentAtMs: number }).sentAtMs).toBeLessThanOrEqual(askedAtMs);
    expect((opened as { sentAtMs: number }).sentAtMs).toBeGreaterThan(T0 + 500);
  });

  it("without a WebSocket constructor (Node 20 and none injected) there is no channel", () => {
    const backend = new HttpClaimsBackend({ baseUrl: "http://svc.test", token: "tok", namespace: "ns" });
    expect(typeof (globalThis as { WebSocket?: unknown }).WebSocket).toBe("undefined");
    expect(backend.openLeaseChannel("g-1", { ttlMs: 3_000, pingIntervalMs: 1_000 })).toBeUndefined();
  });
});
