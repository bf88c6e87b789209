// Coord watch over the Worker: ready, replay from history or a summary, live events in order,
// ping/pong, lag closing with 4008, subprotocol auth and refusals.
import { exports } from "cloudflare:workers";
import { runInDurableObject } from "cloudflare:test";
import type { ScopeObject } from "./test-entry.ts";
import { WATCH_TAG } from "../../src/coord/watch.ts";
import { beforeAll, describe, expect, it } from "vitest";
import { RETAINED_EVENTS } from "../../src/protocol/watch.ts";
import { PRUNE_BATCH_EVENTS } from "../../src/durable/history-pruning.ts";
import { WATCH_MAX_UNACKED_EVENTS } from "../../src/protocol/watch.ts";
import { acquire, del, get, openWatch, post, scopeStub, uniqueScope } from "./coord-helpers.ts";

beforeAll(async () => {
  await exports.default.fetch("http://x/healthz");
}, 60_000);

describe("watch", () => {
  it("sends ready, then live publish, wantLock and unlocked events in order; acquisition emits nothing", async () => {
    const scope = uniqueScope();
    const watch = await openWatch(scope, "?afterGeneration=0");
    expect(await watch.next()).toEqual({ type: "ready", generation: "0" });
    const lease = await acquire(scope, "writer");
    await post(`${scope.url}/leases/${lease.leaseId}/publish`, {
      root: { a: 1 },
      keyPrefixChanged: "d29ybGQtaGVhZC8=",
    });
    await post(`${scope.url}/leases`, { participantId: "reader" });
    await del(`${scope.url}/leases/${lease.leaseId}`);
    const common = { type: "event", volumeId: scope.volumeId, objectStoreId: scope.objectStoreId, fallbackReason: "" };
    expect(await watch.next()).toEqual({
      ...common,
      processId: "writer",
      generation: "1",
      wantLock: false,
      unlocked: false,
      rootChanged: { a: 1 },
      keyPrefixChanged: "d29ybGQtaGVhZC8=",
    });
    expect(await watch.next()).toEqual({
      ...common,
      processId: "reader",
      generation: "1",
      wantLock: true,
      unlocked: false,
      rootChanged: null,
      keyPrefixChanged: "",
    });
    expect(await watch.next()).toEqual({
      ...common,
      processId: "writer",
      generation: "1",
      wantLock: false,
      unlocked: true,
      rootChanged: null,
      keyPrefixChanged: "",
    });
    watch.ws.close(1000, "done");
  });

  it("replays every retained publish after afterGeneration, in order, before live events", async () => {
    const scope = uniqueScope();
    const lease = await acquire(scope);
    for (const root of ["r1", "r2", "r3"]) await post(`${scope.url}/leases/${lease.leaseId}/publish`, { root });
    const watch = await openWatch(scope, "?afterGeneration=1");
    expect(await watch.next()).toEqual({ type: "ready", generation: "3" });
    expect(await watch.next()).toMatchObject({ generation: "2", rootChanged: "r2" });
    expect(await watch.next()).toMatchObject({ generation: "3", rootChanged: "r3" });
    await post(`${scope.url}/leases/${lease.leaseId}/publish`, { root: "r4" });
    expect(await watch.next()).toMatchObject({ generation: "4", rootChanged: "r4" });
    expect(watch.messages.some((m: { replay?: boolean }) => m.replay === true)).toBe(false);
    await del(`${scope.url}/leases/${lease.leaseId}`);
    watch.ws.close(1000, "done");
  });

  it("sends no replay when caught up or when afterGeneration is absent", async () => {
    const scope = uniqueScope();
    const lease = await acquire(scope);
    await post(`${scope.url}/leases/${lease.leaseId}/publish`, {});
    for (const query of ["", "?afterGeneration=1", "?afterGeneration=99"]) {
      const watch = await openWatch(scope, query);
      expect(await watch.next()).toEqual({ type: "ready", generation: "1" });
      await post(`${scope.url}/leases/${lease.leaseId}/keepalive`, {});
      // The next thing this watch sees is the live unlock, not a replay.
      await del(`${scope.url}/leases/${lease.leaseId}`);
      expect(await watch.next()).toMatchObject({ unlocked: true, generation: "1" });
      watch.ws.close(1000, "done");
      const again = await acquire(scope);
      lease.leaseId = again.leaseId;
    }
    await del(`${scope.url}/leases/${lease.leaseId}`);
  });

  it("sends one replay event with the current state when history no longer reaches back", async () => {
    const scope = uniqueScope();
    const stub = scopeStub(scope);
    const id = { volumeId: scope.volumeId, objectStoreId: scope.objectStoreId, key: "" };
    const lease = await acquire(scope);
    const leaseId = lease.leaseId as string;
    await post(`${scope.url}/leases/${leaseId}/publish`, { root: "first", keyPrefixChanged: "cHJlZml4" });
    // Past the first batch prune (durable/history-pruning.ts), which drops the first publish.
    const publishes = RETAINED_EVENTS + PRUNE_BATCH_EVENTS + 10;
    for (let i = 0; i < publishes; i++) await stub.publish(id, leaseId, {});
    const current = String(publishes + 1);
    const watch = await openWatch(scope, "?afterGeneration=0");
    expect(await watch.next()).toEqual({ type: "ready", generation: current });
    expect(await watch.next()).toEqual({
      type: "event",
      processId: "",
      volumeId: scope.volumeId,
      objectStoreId: scope.objectStoreId,
      generation: current,
      wantLock: false,
      unlocked: false,
      rootChanged: "first",
      keyPrefixChanged: "cHJlZml4",
      fallbackReason: "",
      replay: true,
    });
    // Recent history is still replayed exactly.
    const recent = await openWatch(scope, `?afterGeneration=${publishes - 1}`);
    expect(await recent.next()).toMatchObject({ type: "ready" });
    expect(await recent.next()).toMatchObject({ generation: String(publishes) });
    expect(await recent.next()).toMatchObject({ generation: current });
    await del(`${scope.url}/leases/${lease.leaseId}`);
    expect(await watch.next()).toMatchObject({ unlocked: true });
    expect(await recent.next()).toMatchObject({ unlocked: true });
    watch.ws.close(1000, "done");
    recent.ws.close(1000, "done");
  });

  it('answers {"type":"ping"} with {"type":"pong"} (runtime auto-response and the object)', async () => {
    const scope = uniqueScope();
    const watch = await openWatch(scope);
    await watch.next();
    watch.ws.send('{"type":"ping"}');
    expect(await watch.next()).toEqual({ type: "pong" });
    // The runtime answered it (auto-response, which does not wake a hibernated object).
    const stamps = await runInDurableObject(scopeStub(scope), (_o: ScopeObject, state: DurableObjectState) =>
      state.getWebSockets(WATCH_TAG).map((ws) => state.getWebSocketAutoResponseTimestamp(ws)),
    );
    expect(stamps).toHaveLength(1);
    expect(stamps[0]).toBeInstanceOf(Date);
    watch.ws.send('{ "type": "ping" }');
    expect(await watch.next()).toEqual({ type: "pong" });
    watch.ws.close(1000, "done");
  });

  it("closes a subscriber with 4008 once it has too many unacknowledged events; acks keep it open", async () => {
    const scope = uniqueScope();
    const stub = scopeStub(scope);
    const limit = 10;
    await runInDurableObject(stub, (o: ScopeObject) => {
      expect(o.hooks.maxUnacked).toBe(WATCH_MAX_UNACKED_EVENTS);
      o.hooks.maxUnacked = limit;
    });
    const id = { volumeId: scope.volumeId, objectStoreId: scope.objectStoreId, key: "" };
    const lease = await acquire(scope);
    const silent = await openWatch(scope);
    const acking = await openWatch(scope);
    await silent.next();
    await acking.next();
    const tryOnce = { participantId: "p", ttlMs: 1_000, waitMs: 0, waiterId: "unused" };
    const total = 3 * limit;
    for (let sent = 0; sent < total; sent++) {
      await stub.acquire(id, tryOnce); // each refused try is one wantLock event
      if (sent % 5 === 4) {
        while (acking.messages.length < sent + 2) await acking.next();
        // docs/protocol.md#watch-flow-control: the count is the events processed since the last ack.
        acking.ws.send(JSON.stringify({ type: "ack", count: 5 }));
        // A ping the object (not the runtime) answers: its pong proves the ack was processed.
        acking.ws.send('{ "type": "ping" }');
        while ((await acking.next()).type !== "pong");
      }
    }
    expect(await silent.closed).toMatchObject({ code: 4008 });
    expect(silent.messages.length - 1).toBe(limit);
    await del(`${scope.url}/leases/${lease.leaseId}`);
    while (!acking.messages.some((m: { unlocked?: boolean }) => m.unlocked === true)) await acking.next();
    const events = acking.messages.filter((m: { type: string }) => m.type === "event");
    expect(events).toHaveLength(total + 1);
    acking.ws.close(1000, "done");
  });

  it("accepts the token as a subprotocol and echoes it; refuses bad requests before upgrading", async () => {
    const scope = uniqueScope();
    const res = await exports.default.fetch(`${scope.url}/watch`, {
      headers: { Upgrade: "websocket", "Sec-WebSocket-Protocol": "shiftlock.bearer.test-read-all" },
    });
    expect(res.status).toBe(101);
    expect(res.headers.get("Sec-WebSocket-Protocol")).toBe("shiftlock.bearer.test-read-all");
    res.webSocket?.accept();
    res.webSocket?.close(1000, "done");

    const bad = await get(`${scope.url}/watch?afterGeneration=01`);
    expect(bad.status).toBe(400);
    expect(bad.body.error).toMatchObject({ code: "invalid_request", field: "afterGeneration" });
    const plain = await get(`${scope.url}/watch`);
    expect(plain.status).toBe(400);
  });
});
