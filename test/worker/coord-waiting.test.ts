// Waiting, expiry and durability of a scope's object: FIFO grants, waitMs timeouts and
// lease expiry driven by the alarm (with a manual clock installed in the object), cancelled
// waits, and the epoch/generation/root surviving a restart of every object.
import { exports } from "cloudflare:workers";
import { abortAllDurableObjects, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { beforeAll, describe, expect, it, vi } from "vitest";
import type { ScopeObject } from "./test-entry.ts";
import { acquire, call, del, get, installClock, openWatch, post, scopeStub, uniqueScope } from "./coord-helpers.ts";

beforeAll(async () => {
  await exports.default.fetch("http://x/healthz");
}, 60_000);

/** Wait until the scope's object has `n` queued acquires. */
async function queued(scope: ReturnType<typeof uniqueScope>, n: number): Promise<void> {
  await vi.waitFor(async () => {
    expect(await runInDurableObject(scopeStub(scope), (o: ScopeObject) => o.queuedCount())).toBe(n);
  });
}

describe("waiting", () => {
  it("grants waiters first-come first-served, each with the next epoch", async () => {
    const scope = uniqueScope();
    const a = await acquire(scope, "a");
    const b = post(`${scope.url}/leases`, { participantId: "b", waitMs: 60_000 });
    await queued(scope, 1);
    const c = post(`${scope.url}/leases`, { participantId: "c", waitMs: 60_000 });
    await queued(scope, 2);
    // A try does not overtake the queue.
    expect((await post(`${scope.url}/leases`, { participantId: "d" })).status).toBe(409);

    expect((await del(`${scope.url}/leases/${a.leaseId}`)).status).toBe(204);
    const bRes = await b;
    expect(bRes.status).toBe(201);
    expect(bRes.body.lease).toMatchObject({ participantId: "b", epoch: "2" });
    await queued(scope, 1);

    await del(`${scope.url}/leases/${bRes.body.lease.leaseId}`);
    const cRes = await c;
    expect(cRes.body.lease).toMatchObject({ participantId: "c", epoch: "3" });
    await del(`${scope.url}/leases/${cRes.body.lease.leaseId}`);
  });

  it("keepalive reports wantLock while someone waits", async () => {
    const scope = uniqueScope();
    const a = await acquire(scope, "a");
    const b = post(`${scope.url}/leases`, { participantId: "b", waitMs: 60_000 });
    await queued(scope, 1);
    const kept = await post(`${scope.url}/leases/${a.leaseId}/keepalive`, {});
    expect(kept.body.wantLock).toBe(true);
    await del(`${scope.url}/leases/${a.leaseId}`);
    const granted = await b;
    await del(`${scope.url}/leases/${granted.body.lease.leaseId}`);
  });

  it("answers 409 lease_held when waitMs passes (alarm at the waiter's deadline)", async () => {
    const scope = uniqueScope();
    const clock = await installClock(scope);
    const a = await acquire(scope, "a", { ttlMs: 60_000 });
    const b = post(`${scope.url}/leases`, { participantId: "b", waitMs: 500 });
    await queued(scope, 1);
    clock.now += 499;
    expect(await runDurableObjectAlarm(scopeStub(scope))).toBe(true);
    await queued(scope, 1);
    clock.now += 1;
    expect(await runDurableObjectAlarm(scopeStub(scope))).toBe(true);
    const res = await b;
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe("lease_held");
    expect(res.body.error.holder).toBe("a"); // still held by a when b's wait ran out
    await del(`${scope.url}/leases/${a.leaseId}`);
    // The released lease's alarm stays armed (alarms only move earlier); firing it finds
    // nothing due and arms nothing more.
    expect(await runDurableObjectAlarm(scopeStub(scope))).toBe(true);
    expect(await runDurableObjectAlarm(scopeStub(scope))).toBe(false);
  });

  it("a disconnected waiter leaves the queue (Request.signal → cancelWait)", async () => {
    const scope = uniqueScope();
    const a = await acquire(scope, "a");
    const controller = new AbortController();
    const b = call("POST", `${scope.url}/leases`, { participantId: "b", waitMs: 60_000 }, undefined, controller.signal);
    await queued(scope, 1);
    controller.abort();
    await expect(b).rejects.toThrow();
    await queued(scope, 0);
    await del(`${scope.url}/leases/${a.leaseId}`);
    // Nobody holds it now: the cancelled waiter was not granted.
    const d = await acquire(scope, "d");
    expect(d.epoch).toBe("2");
    await del(`${scope.url}/leases/${d.leaseId}`);
  });

  it("a grant whose caller already left is given back at once", async () => {
    const scope = uniqueScope();
    const stub = scopeStub(scope);
    const id = { volumeId: scope.volumeId, objectStoreId: scope.objectStoreId, key: "" };
    const a = await acquire(scope, "a");
    const waiting = stub.acquire(id, { participantId: "b", ttlMs: 60_000, waitMs: 60_000, waiterId: "w-b" });
    await queued(scope, 1);
    await del(`${scope.url}/leases/${a.leaseId}`);
    const granted = (await waiting) as { status: number; body: { lease: { leaseId: string } } };
    expect(granted.status).toBe(201);
    // The router saw its client disconnect just as the grant arrived.
    await stub.cancelWait(id, "w-b");
    expect((await post(`${scope.url}/leases/${granted.body.lease.leaseId}/keepalive`, {})).status).toBe(410);
    const next = await acquire(scope, "c");
    expect(next.epoch).toBe("3");
    await del(`${scope.url}/leases/${next.leaseId}`);
  });
});

describe("queue bound", () => {
  it("refuses a waiting acquire beyond the scope's queue bound with 429 and Retry-After", async () => {
    const scope = uniqueScope();
    await runInDurableObject(scopeStub(scope), (o: ScopeObject) => {
      o.hooks.maxWaiters = 1;
    });
    const a = await acquire(scope, "a");
    const b = post(`${scope.url}/leases`, { participantId: "b", waitMs: 60_000 });
    await queued(scope, 1);
    const c = await post(`${scope.url}/leases`, { participantId: "c", waitMs: 60_000 });
    expect(c.status).toBe(429);
    expect(c.body.error.code).toBe("rate_limited");
    expect(c.headers.get("Retry-After")).toBe("1");
    // A try is still just lease_held.
    expect((await post(`${scope.url}/leases`, { participantId: "d" })).status).toBe(409);
    await del(`${scope.url}/leases/${a.leaseId}`);
    const granted = await b;
    await del(`${scope.url}/leases/${granted.body.lease.leaseId}`);
  });
});

describe("client-named waits (waiterId)", () => {
  it("DELETE {scope}/leases/{waiterId} cancels a queued wait, and refuses the id afterwards", async () => {
    const scope = uniqueScope();
    const a = await acquire(scope, "a");
    const waiterId = crypto.randomUUID();
    const b = post(`${scope.url}/leases`, { participantId: "b", waitMs: 60_000, waiterId });
    await queued(scope, 1);
    expect((await del(`${scope.url}/leases/${waiterId}`)).status).toBe(204);
    const res = await b;
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe("lease_held");
    await queued(scope, 0);
    // A cancel that overtook its acquire still wins.
    const late = await post(`${scope.url}/leases`, { participantId: "b", waitMs: 60_000, waiterId });
    expect(late.status).toBe(409);
    await queued(scope, 0);
    await del(`${scope.url}/leases/${a.leaseId}`);
    expect((await acquire(scope, "c")).epoch).toBe("2");
  });

  it("DELETE by waiterId gives back a grant the caller never received; a waiterId in use is refused", async () => {
    const scope = uniqueScope();
    const a = await acquire(scope, "a");
    const waiterId = crypto.randomUUID();
    const b = post(`${scope.url}/leases`, { participantId: "b", waitMs: 60_000, waiterId });
    await queued(scope, 1);
    const dup = await post(`${scope.url}/leases`, { participantId: "x", waitMs: 60_000, waiterId });
    expect(dup.status).toBe(400);
    expect(dup.body.error).toMatchObject({ code: "invalid_request", field: "waiterId" });
    await del(`${scope.url}/leases/${a.leaseId}`);
    const granted = await b;
    expect(granted.status).toBe(201);
    expect((await del(`${scope.url}/leases/${waiterId}`)).status).toBe(204);
    expect((await post(`${scope.url}/leases/${granted.body.lease.leaseId}/keepalive`, {})).status).toBe(410);
    const c = await acquire(scope, "c");
    expect(c.epoch).toBe("3");
    await del(`${scope.url}/leases/${c.leaseId}`);
  });
});

describe("expiry", () => {
  it("the alarm expires the lease like a release (unlocked, expired:true) and grants the next waiter", async () => {
    const scope = uniqueScope();
    const clock = await installClock(scope);
    const watch = await openWatch(scope);
    expect(await watch.next()).toEqual({ type: "ready", generation: "0" });
    const a = await acquire(scope, "a", { ttlMs: 1_000 });
    const b = post(`${scope.url}/leases`, { participantId: "b", waitMs: 60_000, ttlMs: 5_000 });
    expect(await watch.next()).toMatchObject({ type: "event", processId: "b", wantLock: true, unlocked: false });

    clock.now += 1_000;
    expect(await runDurableObjectAlarm(scopeStub(scope))).toBe(true);
    expect(watch.messages).toHaveLength(2); // not yet: expiry is strictly after expiresAtMs
    clock.now += 1;
    expect(await runDurableObjectAlarm(scopeStub(scope))).toBe(true);
    expect(await watch.next()).toEqual({
      type: "event",
      processId: "a",
      volumeId: scope.volumeId,
      objectStoreId: scope.objectStoreId,
      generation: "0",
      wantLock: false,
      unlocked: true,
      rootChanged: null,
      keyPrefixChanged: "",
      fallbackReason: "",
      expired: true,
    });
    const granted = await b;
    expect(granted.status).toBe(201);
    expect(granted.body.lease).toMatchObject({ participantId: "b", epoch: "2", expiresAtMs: clock.now + 5_000 });
    expect((await post(`${scope.url}/leases/${a.leaseId}/keepalive`, {})).status).toBe(410);
    await del(`${scope.url}/leases/${granted.body.lease.leaseId}`);
    expect(await watch.next()).toMatchObject({ processId: "b", unlocked: true });
    // The released lease's alarm stays armed (alarms only move earlier); firing it finds
    // nothing due and arms nothing more.
    expect(await runDurableObjectAlarm(scopeStub(scope))).toBe(true);
    expect(await runDurableObjectAlarm(scopeStub(scope))).toBe(false);
    watch.ws.close(1000, "done");
  });

  it("is applied lazily too: an expired lease is lost on access even before the alarm runs", async () => {
    const scope = uniqueScope();
    const clock = await installClock(scope);
    const a = await acquire(scope, "a", { ttlMs: 1_000 });
    clock.now += 1_001;
    expect((await post(`${scope.url}/leases/${a.leaseId}/refresh`)).status).toBe(410);
    const b = await acquire(scope, "b");
    expect(b.epoch).toBe("2");
    await del(`${scope.url}/leases/${b.leaseId}`);
    // The released lease's alarm stays armed (alarms only move earlier); firing it finds
    // nothing due and arms nothing more.
    expect(await runDurableObjectAlarm(scopeStub(scope))).toBe(true);
    expect(await runDurableObjectAlarm(scopeStub(scope))).toBe(false);
  });
});

describe("durability", () => {
  it("epoch, generation, root and prefix survive a restart of every object", async () => {
    const scope = uniqueScope();
    const first = await acquire(scope);
    await post(`${scope.url}/leases/${first.leaseId}/publish`, { root: { r: 1 }, keyPrefixChanged: "aGVhZA==" });
    await del(`${scope.url}/leases/${first.leaseId}`);
    const second = await acquire(scope);
    expect(second.epoch).toBe("2");

    await abortAllDurableObjects();

    // The holder is durable too: the lease is still held after the restart.
    expect((await post(`${scope.url}/leases`, { participantId: "x" })).status).toBe(409);
    expect((await get(`${scope.url}/snapshot`)).body).toMatchObject({ generation: "1", root: { r: 1 } });
    await del(`${scope.url}/leases/${second.leaseId}`);
    const third = await acquire(scope);
    expect(third.epoch).toBe("3");
    await del(`${scope.url}/leases/${third.leaseId}`);
    const watch = await openWatch(scope, "?afterGeneration=0");
    expect(await watch.next()).toEqual({ type: "ready", generation: "1" });
    expect(await watch.next()).toMatchObject({ generation: "1", rootChanged: { r: 1 }, keyPrefixChanged: "aGVhZA==" });
    watch.ws.close(1000, "done");
  });
});
