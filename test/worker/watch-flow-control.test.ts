/* eslint-disable @typescript-eslint/no-unsafe-return -- watch messages are inspected loosely. */
// Watch flow control at the objects (docs/protocol.md#watch-flow-control): claims watchers acknowledge the last version
// processed, coord watchers the number of events processed since their last ack; one window
// and one 4008 rule for both. Also: the objects' 101 never carries a subprotocol (the bearer
// token stays in the router).
import { exports } from "cloudflare:workers";
import { runInDurableObject } from "cloudflare:test";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import type { ScopeObject } from "./test-entry.ts";
import { WATCH_TAG as SCOPE_WATCH_TAG } from "../../src/coord/watch.ts";
import { WATCH_TAG as CLAIM_WATCH_TAG } from "../../src/claims/watch.ts";
import { churn, claimStub, clearTrackedAlarms, openWatch as openClaimWatch, track, unique } from "./claims-helpers.ts";
import { acquire, del, openWatch, scopeStub, uniqueScope } from "./coord-helpers.ts";
import { ack } from "./object-helpers.ts";
import type { Watch } from "./router-client.ts";

beforeAll(async () => {
  await exports.default.fetch("http://x/healthz");
}, 60_000);
afterEach(clearTrackedAlarms);

const events = (w: Watch) => w.messages.filter((m) => m.type === "event");

describe("coord acks: events processed since the last ack", () => {
  const limit = 10;

  async function setUp() {
    const scope = uniqueScope();
    const stub = scopeStub(scope);
    await runInDurableObject(stub, (o: ScopeObject) => {
      o.hooks.maxUnacked = limit;
    });
    const id = { volumeId: scope.volumeId, objectStoreId: scope.objectStoreId, key: "" };
    const lease = await acquire(scope);
    const watch = await openWatch(scope);
    await watch.next(); // ready
    /** `n` refused tries on the held lease: one wantLock event each. */
    const produce = async (n: number) => {
      for (let i = 0; i < n; i++)
        await stub.acquire(id, { participantId: "p", ttlMs: 1_000, waitMs: 0, waiterId: "x" });
    };
    const unacked = () =>
      runInDurableObject(stub, (_o: ScopeObject, state) =>
        state.getWebSockets(SCOPE_WATCH_TAG).map((ws) => (ws.deserializeAttachment() as { unacked: number }).unacked),
      );
    return { scope, lease, watch, produce, unacked };
  }

  it("each ack subtracts its count, so a subscriber acking per batch is never closed", async () => {
    const { scope, lease, watch, produce, unacked } = await setUp();
    for (let round = 1; round <= 3; round++) {
      await produce(8);
      await watch.until(() => events(watch).length === 8 * round);
      expect(await unacked()).toEqual([8]);
      await ack(watch, { type: "ack", count: 8 });
      expect(await unacked()).toEqual([0]);
    }
    expect(watch.ws.readyState).toBe(WebSocket.OPEN);
    await del(`${scope.url}/leases/${lease.leaseId}`);
    watch.ws.close(1000, "done");
  });

  it("an ack never takes the count below zero: over-acking buys no extra window", async () => {
    const { lease, scope, watch, produce, unacked } = await setUp();
    await produce(3);
    await watch.until(() => events(watch).length === 3);
    await ack(watch, { type: "ack", count: 2 });
    expect(await unacked()).toEqual([1]);
    await ack(watch, { type: "ack", count: 1_000 });
    expect(await unacked()).toEqual([0]);
    await produce(limit + 1);
    expect(await watch.closed).toMatchObject({ code: 4008 });
    expect(events(watch)).toHaveLength(3 + limit);
    await del(`${scope.url}/leases/${lease.leaseId}`);
  });
});

describe("claim acks: the last version processed", () => {
  it("counts only the events after the acknowledged version", async () => {
    const ns = unique("ns");
    const claim = unique();
    track(ns, claim);
    const stub = claimStub(ns, claim);
    const watch = await openClaimWatch(ns, claim);
    await watch.next(); // snapshot (null)
    const last = await churn(stub, claim, 3); // versions 1..6, all events
    await watch.until(() => events(watch).length === 6);
    const attachment = () =>
      runInDurableObject(stub, (_o, state) => state.getWebSockets(CLAIM_WATCH_TAG)[0]!.deserializeAttachment());
    expect(await attachment()).toEqual({ v: 1, lastSent: "6", unacked: 6 });
    await ack(watch, { type: "ack", version: "4" });
    expect(await attachment()).toEqual({ v: 1, lastSent: "6", unacked: 2 });
    await ack(watch, { type: "ack", version: last.toString() });
    expect(await attachment()).toEqual({ v: 1, lastSent: "6", unacked: 0 });
    watch.ws.close(1000);
  });
});

describe("the objects' 101", () => {
  const offered = "shiftlock.bearer.test-read-all";

  it("carries no Sec-WebSocket-Protocol: a claim object never sees or echoes the token", async () => {
    const claim = unique();
    const res = await claimStub(unique("ns"), claim).fetch(
      `http://claim/watch?name=${encodeURIComponent(claim)}&subprotocol=${offered}`,
      { headers: { Upgrade: "websocket", "Sec-WebSocket-Protocol": offered } },
    );
    expect(res.status).toBe(101);
    expect(res.headers.get("Sec-WebSocket-Protocol")).toBeNull();
    res.webSocket!.accept();
    res.webSocket!.close(1000);
  });

  it("carries no Sec-WebSocket-Protocol: a scope object never sees or echoes the token", async () => {
    const scope = uniqueScope();
    const id = { volumeId: scope.volumeId, objectStoreId: scope.objectStoreId, key: "" };
    const res = await scopeStub(scope).fetch(
      `http://scope/watch?scope=${encodeURIComponent(JSON.stringify(id))}&subprotocol=${offered}`,
      { headers: { Upgrade: "websocket", "Sec-WebSocket-Protocol": offered } },
    );
    expect(res.status).toBe(101);
    expect(res.headers.get("Sec-WebSocket-Protocol")).toBeNull();
    res.webSocket!.accept();
    res.webSocket!.close(1000);
  });
});
