// The scope's storage: the lease epoch (the write lease's fencing token) moves only through a
// guarded update, one step per grant, and a schema newer than the code is refused at start-up.
import { exports } from "cloudflare:workers";
import { runInDurableObject } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import type { ScopeObject } from "./test-entry.ts";
import { TestClock, acquire, del, get, post, scopeStub, uniqueScope } from "./coord-helpers.ts";
import { restartObject } from "./object-helpers.ts";

beforeAll(async () => {
  await exports.default.fetch("http://x/healthz");
}, 60_000);

const storedEpoch = (scope: ReturnType<typeof uniqueScope>) =>
  runInDurableObject(
    scopeStub(scope),
    (_o: ScopeObject, state) =>
      state.storage.sql.exec<{ epoch: string }>("SELECT epoch FROM scope_state WHERE id = 1").one().epoch,
  );

describe("lease epoch", () => {
  it("refuses (internal) a grant decided from an epoch that is no longer the stored one, writing nothing", async () => {
    const scope = uniqueScope();
    const first = await acquire(scope, "a");
    await del(`${scope.url}/leases/${first.leaseId}`);
    // The stored epoch moves underneath the instance's copy (which still says 1).
    await runInDurableObject(scopeStub(scope), (_o: ScopeObject, state) => {
      state.storage.sql.exec("UPDATE scope_state SET epoch = '5' WHERE id = 1");
    });
    const refused = await post(`${scope.url}/leases`, { participantId: "b" });
    expect(refused.status).toBe(500);
    expect(refused.body.error.code).toBe("internal");
    expect(await storedEpoch(scope)).toBe("5");
    // A fresh instance decides from the stored epoch: the token never goes back.
    await restartObject(scopeStub(scope));
    const next = await acquire(scope, "b");
    expect(next.epoch).toBe("6");
    await del(`${scope.url}/leases/${next.leaseId}`);
    await runInDurableObject(scopeStub(scope), (_o: ScopeObject, state) => state.storage.deleteAlarm());
  });

  it("advances by one per grant when one step grants twice (expiry passes it on, a cancel passes it on again)", async () => {
    const scope = uniqueScope();
    const id = { volumeId: scope.volumeId, objectStoreId: scope.objectStoreId, key: "" };
    // All in one instance, called directly: the manual clock lives in that instance, and a
    // waiting acquire queues synchronously, before its first await.
    const granted = await runInDurableObject(scopeStub(scope), async (o: ScopeObject) => {
      const clock = new TestClock(Date.UTC(2030, 0, 1));
      o.hooks.clock = clock;
      const held = await o.acquire(id, { participantId: "a", ttlMs: 1_000, waitMs: 0, waiterId: "w-a" });
      expect(held.status).toBe(201);
      const b = o.acquire(id, { participantId: "b", ttlMs: 60_000, waitMs: 60_000, waiterId: "w-b" });
      const c = o.acquire(id, { participantId: "c", ttlMs: 60_000, waitMs: 60_000, waiterId: "w-c" });
      expect(o.queuedCount()).toBe(2);
      clock.now += 1_001;
      // One decision: a's lease expired → granted to b (epoch 2); b's caller left → passed to c (3).
      expect(await o.cancelWait(id, "w-b")).toEqual({ status: 204, body: null });
      expect((await b).status).toBe(201);
      return (await c) as { status: number; body: { lease: { leaseId: string; epoch: string } } };
    });
    expect(granted.status).toBe(201);
    expect(granted.body.lease.epoch).toBe("3");
    expect(await storedEpoch(scope)).toBe("3");
    await del(`${scope.url}/leases/${granted.body.lease.leaseId}`);
    await runInDurableObject(scopeStub(scope), (_o: ScopeObject, state) => state.storage.deleteAlarm());
  });
});

describe("schema", () => {
  it("refuses to start on a schema newer than the code, changing nothing", async () => {
    const scope = uniqueScope();
    const lease = await acquire(scope, "a");
    await post(`${scope.url}/leases/${lease.leaseId}/publish`, { root: "r1" });
    await del(`${scope.url}/leases/${lease.leaseId}`);
    await runInDurableObject(scopeStub(scope), (_o: ScopeObject, state) => {
      void state.storage.deleteAlarm();
      state.storage.sql.exec("UPDATE meta SET value = '99' WHERE key = 'schema_version'");
    });
    await restartObject(scopeStub(scope));
    for (const res of [await get(`${scope.url}/snapshot`), await post(`${scope.url}/leases`, { participantId: "b" })]) {
      expect(res.status).toBe(500);
      expect(res.body.error.code).toBe("internal");
    }
  });
});
