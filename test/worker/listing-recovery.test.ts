/* eslint-disable @typescript-eslint/no-explicit-any, @typescript-eslint/no-unsafe-return, @typescript-eslint/no-unsafe-argument -- JSON bodies under test are inspected loosely. */
// The listing after a restart, and after a commit that failed (docs/listing.md "The lag
// guarantee"). The runtime starts an object by itself — its alarm after a restart, a deploy or
// an eviction — by its id alone, so the fresh instance has no `ctx.id.name` (restartUnnamed).
// What such an instance commits (an expiry that fell due while nothing ran, a lapsed transfer,
// a coord lease running out, a queue that did not survive), or finds committed and
// undelivered, reaches the listing and /stats like any other change; a listing shard started
// the same way forwards what it holds to its own namespace's index, and a generation the end
// of its lease to the claims it bound there; rows an earlier version
// left (no namespace, a change never staged) catch up at the next start-up; and a commit
// that rolled back leaves nothing the next one trips over.
// Time is a manual clock far ahead of the wall clock (workerd never fires these alarms on its
// own); alarms are run by hand, as the runtime runs them; nothing sleeps.
import { runInDurableObject } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import { exports } from "cloudflare:workers";
import { ManualClock } from "../../src/core/clock.ts";
import { listingShardOf } from "../../src/core/listing-shard.ts";
import { objectName } from "../../src/durable/object-names.ts";
import { READ, claimStub, claimUrl, get, post, unique } from "./claims-helpers.ts";
import { scopeStub, uniqueScope } from "./coord-helpers.ts";
import { SHARDS, settleListing, shardStub } from "./listing-helpers.ts";
import { restartObject, restartUnnamed } from "./object-helpers.ts";
import type { ClaimObject, GenerationObject, ScopeObject, TestHooks } from "./test-entry.ts";
import { testEnv } from "./test-env.ts";

beforeAll(async () => {
  await exports.default.fetch("http://x/healthz");
}, 60_000);

/** Where the manual clocks start: years ahead of the wall clock. */
const START_MS = Date.UTC(2030, 0, 1);
const TTL_MS = 60_000;

/** An object the tests drive: its settings and its alarm handler. */
type Driven = { hooks: TestHooks; alarm(): Promise<void> };

type Stub = DurableObjectStub<ClaimObject> | DurableObjectStub<ScopeObject> | DurableObjectStub<GenerationObject>;

/** Install a manual clock at `atMs` in the instance behind `stub`. */
async function clockAt(stub: Stub, atMs: number): Promise<void> {
  await runInDurableObject(stub as DurableObjectStub, (o) => {
    (o as unknown as Driven).hooks.clock = new ManualClock(atMs);
  });
}

/**
 * Fire the alarm of the instance behind `stub` at `atMs`, as the runtime does (the alarm
 * cleared, then the handler run), checking that the instance is one the runtime started
 * without a name.
 */
async function fireAlarmUnnamed(stub: Stub, atMs: number): Promise<void> {
  const named = await runInDurableObject(stub as DurableObjectStub, async (instance, state) => {
    const o = instance as unknown as Driven;
    o.hooks.clock = new ManualClock(atMs);
    await state.storage.deleteAlarm();
    await o.alarm();
    return state.id.name !== undefined;
  });
  expect(named).toBe(false);
}

function listUrl(ns: string, list: string): string {
  return `http://x/v1/ns/${encodeURIComponent(ns)}/${list}`;
}

async function listed(ns: string, list: string): Promise<any[]> {
  const res = await get(listUrl(ns, list), READ);
  expect(res.status).toBe(200);
  return res.body[list];
}

async function stats(ns: string): Promise<any> {
  return (await get(listUrl(ns, "stats"), READ)).body;
}

/** Delete the alarm of the object behind `stub` (tests leave none behind). */
async function clearAlarm(stub: Stub): Promise<void> {
  await runInDurableObject(stub as DurableObjectStub, (_o, state) => state.storage.deleteAlarm());
}

/** A claim `generationId` acquired at {@link START_MS}, listed. */
async function listedClaim(generationId: string): Promise<{ ns: string; name: string; acquired: any }> {
  const ns = unique("ns");
  const name = unique();
  await clockAt(claimStub(ns, name), START_MS);
  const acquired = (await post(claimUrl(ns, name, "/acquire"), { generationId, ttlMs: TTL_MS })).body.claim;
  await settleListing(ns, [claimStub(ns, name)]);
  return { ns, name, acquired };
}

describe("a claim started afresh by its alarm after a restart", () => {
  it("an expiry that fell due while nothing ran is listed and tallied, and so is the next call's change", async () => {
    const { ns, name, acquired } = await listedClaim("g1");
    expect((await listed(ns, "claims")).map((c) => [c.phase, c.ownerGeneration])).toEqual([["owned", "g1"]]);

    // The runtime goes down; the deadline passes; it comes back and runs the overdue alarm.
    const stub = await restartUnnamed(testEnv.CLAIMS, claimStub(ns, name));
    await fireAlarmUnnamed(stub, acquired.expiresAtMs + 1);
    await settleListing(ns);
    const [entry] = await listed(ns, "claims");
    expect(entry).toMatchObject({ phase: "unowned", ownerGeneration: "", previousOwner: "g1", reason: "expired" });
    const after = await stats(ns);
    expect(after.claimsByPhase).toEqual({ unowned: 1, owned: 0, reserved: 0, draining: 0 });
    expect(after.lastMinute).toMatchObject({ acquires: 1, expiries: 1 });
    // The listing holds exactly what the object holds.
    expect(entry).toEqual((await get(claimUrl(ns, name))).body.claim);

    // The first call after the restart reaches the same unnamed instance: its change is listed too.
    expect((await post(claimUrl(ns, name, "/acquire"), { generationId: "g2", ttlMs: TTL_MS })).status).toBe(200);
    await settleListing(ns, [stub]);
    expect((await listed(ns, "claims")).map((c) => [c.phase, c.ownerGeneration])).toEqual([["owned", "g2"]]);
    expect((await stats(ns)).claimsByPhase).toMatchObject({ unowned: 0, owned: 1 });
    await clearAlarm(stub);
  });

  it("a prepared transfer that lapsed while nothing ran is no longer listed as reserved", async () => {
    const { ns, name } = await listedClaim("gen-1");
    const prepared = await post(claimUrl(ns, name, "/transfer/prepare"), {
      fromGeneration: "gen-1",
      toGeneration: "gen-2",
      token: "1",
      ttlMs: 30_000,
    });
    expect(prepared.status).toBe(200);
    await settleListing(ns, [claimStub(ns, name)]);
    expect(await listed(ns, "claims")).toMatchObject([{ phase: "reserved", pendingSuccessor: "gen-2" }]);
    expect((await stats(ns)).claimsByPhase).toMatchObject({ reserved: 1 });

    const stub = await restartUnnamed(testEnv.CLAIMS, claimStub(ns, name));
    await fireAlarmUnnamed(stub, prepared.body.claim.expiresAtMs + 1);
    await settleListing(ns);
    const [entry] = await listed(ns, "claims");
    expect(entry).toMatchObject({ phase: "unowned", pendingSuccessor: "", transferStatus: "", reason: "expired" });
    expect((await stats(ns)).claimsByPhase).toEqual({ unowned: 1, owned: 0, reserved: 0, draining: 0 });
    expect(entry).toEqual((await get(claimUrl(ns, name))).body.claim);
    await clearAlarm(stub);
  });

  it("a change committed but never delivered before the restart is delivered by that alarm", async () => {
    const ns = unique("ns");
    const name = unique();
    await runInDurableObject(claimStub(ns, name), async (o) => {
      o.hooks.clock = new ManualClock(START_MS);
      o.hooks.holdIndexDelivery = true; // the instance dies before delivering
      const res = await o.command(name, { op: "acquire", body: { generationId: "g1", ttlMs: TTL_MS } });
      expect(res.status).toBe(200);
    });
    const stub = await restartUnnamed(testEnv.CLAIMS, claimStub(ns, name));
    // Early: the claim is still held, nothing changes, but the row it left goes now.
    await fireAlarmUnnamed(stub, START_MS + 1_000);
    await settleListing(ns);
    expect((await listed(ns, "claims")).map((c) => [c.phase, c.ownerGeneration])).toEqual([["owned", "g1"]]);
    expect((await stats(ns)).claimsByPhase).toMatchObject({ owned: 1 });
    await clearAlarm(stub);
  });
});

describe("a coord scope started afresh by its alarm after a restart", () => {
  it("a lease that ran out while nothing ran is listed as not held", async () => {
    const scope = uniqueScope();
    await clockAt(scopeStub(scope), START_MS);
    const lease = (await post(`${scope.url}/leases`, { participantId: "writer", ttlMs: TTL_MS })).body.lease;
    await settleListing(scope.ns, [scopeStub(scope)]);
    expect(await listed(scope.ns, "scopes")).toMatchObject([{ held: true, holder: "writer", wantLock: false }]);
    expect((await stats(scope.ns)).scopes).toBe(1);

    const stub = await restartUnnamed(testEnv.SCOPES, scopeStub(scope));
    await fireAlarmUnnamed(stub, lease.expiresAtMs + 1);
    await settleListing(scope.ns);
    expect(await listed(scope.ns, "scopes")).toMatchObject([
      { held: false, holder: "", wantLock: false, leaseExpiresAtMs: 0 },
    ]);
    expect((await stats(scope.ns)).lastMinute).toMatchObject({ acquires: 1, expiries: 1 });
    await clearAlarm(stub);
  });

  it("a queue that did not survive the restart is listed as wantLock false", async () => {
    const scope = uniqueScope();
    await clockAt(scopeStub(scope), START_MS);
    await post(`${scope.url}/leases`, { participantId: "writer", ttlMs: TTL_MS });
    // A waiter queues (in the instance's memory): the listing shows that someone wants the lock.
    const waiting = post(`${scope.url}/leases`, { participantId: "next", waitMs: 30_000 });
    await expect.poll(async () => runInDurableObject(scopeStub(scope), (o) => o.queuedCount())).toBe(1);
    await settleListing(scope.ns, [scopeStub(scope)]);
    expect(await listed(scope.ns, "scopes")).toMatchObject([{ held: true, wantLock: true }]);

    const stub = await restartUnnamed(testEnv.SCOPES, scopeStub(scope));
    await waiting; // its request ended with the instance
    // The waiter's deadline, with the lease still held: the alarm finds nobody queued.
    await fireAlarmUnnamed(stub, START_MS + 30_001);
    await settleListing(scope.ns);
    expect(await listed(scope.ns, "scopes")).toMatchObject([{ held: true, holder: "writer", wantLock: false }]);
    await clearAlarm(stub);
  });
});

describe("a generation started afresh by its alarm after a restart", () => {
  it("a registration committed but never delivered is listed and tallied", async () => {
    const ns = unique("ns");
    const id = unique("gen");
    const named = () => testEnv.GENERATIONS.getByName(objectName(ns, "generation", id));
    await runInDurableObject(named(), async (o) => {
      o.hooks.holdIndexDelivery = true; // the instance dies before delivering
      expect((await o.register({ id, service: "api", instanceId: "i-1" })).status).toBe(200);
    });
    const stub = await restartUnnamed(testEnv.GENERATIONS, named());
    await fireAlarmUnnamed(stub, Date.now());
    await settleListing(ns);
    expect((await listed(ns, "generations")).map((g) => [g.id, g.service])).toEqual([[id, "api"]]);
    expect((await stats(ns)).generations).toBe(1);
  });
});

describe("an object started without a name reaches its own namespace", () => {
  it("a generation whose lease ran out while nothing ran tells its bound claim, listed unowned", async () => {
    const ns = unique("ns");
    const id = unique("gen");
    const base = `http://x/v1/ns/${encodeURIComponent(ns)}/generations`;
    const named = () => testEnv.GENERATIONS.getByName(objectName(ns, "generation", id));
    expect((await post(base, { id, service: "api", instanceId: "i-1" })).status).toBe(200);
    await clockAt(named(), START_MS);
    const kept = await post(`${base}/${encodeURIComponent(id)}/keepalive`, { ttlMs: TTL_MS });
    expect(kept.status).toBe(200);
    const name = unique();
    const held = await post(claimUrl(ns, name, "/acquire"), { generationId: id, bound: true });
    expect(held.body.claim).toMatchObject({ bound: true, ownerGeneration: id });
    await settleListing(ns, [claimStub(ns, name), named()]);
    expect((await stats(ns)).claimsByPhase).toMatchObject({ owned: 1 });

    // The runtime starts the generation for its overdue alarm, without a name: the end of its
    // lease goes to the claim in its own namespace.
    // Its first read after the restart keeps the lease one ttl (keepalives it answered before
    // may have promised that much: docs/generations.md "The lease after a restart"); its next
    // alarm ends it.
    const stub = await restartUnnamed(testEnv.GENERATIONS, named());
    await fireAlarmUnnamed(stub, START_MS + 10 * TTL_MS);
    expect((await get(claimUrl(ns, name))).body.claim).toMatchObject({ phase: "owned", bound: true });
    await fireAlarmUnnamed(stub, START_MS + 11 * TTL_MS + 1);
    expect((await get(claimUrl(ns, name))).body.claim).toMatchObject({ phase: "unowned", bound: false });
    await settleListing(ns, [claimStub(ns, name)]);
    expect(await listed(ns, "claims")).toMatchObject([{ name, phase: "unowned", previousOwner: id }]);
    expect((await stats(ns)).claimsByPhase).toMatchObject({ unowned: 1, owned: 0 });
    await clearAlarm(stub);
    await clearAlarm(claimStub(ns, name));
  });
});

describe("a listing shard started afresh by its alarm after a restart", () => {
  it("forwards what it accepted to its own namespace's index", async () => {
    const ns = unique("ns");
    const name = unique();
    const shard = listingShardOf("claim", name, SHARDS);
    await runInDurableObject(claimStub(ns, name), async (o) => {
      const res = await o.command(name, { op: "acquire", body: { generationId: "g1", ttlMs: TTL_MS } });
      expect(res.status).toBe(200);
      await o.flushIndex(); // accepted by the shard, which then dies before forwarding
    });
    const stub = await restartUnnamed(testEnv.INDEX_SHARDS, shardStub(ns, shard));
    const named = await runInDurableObject(stub, async (o, state) => {
      await state.storage.deleteAlarm();
      await o.alarm();
      return state.id.name !== undefined;
    });
    expect(named).toBe(false);
    expect((await listed(ns, "claims")).map((c) => [c.name, c.phase])).toEqual([[name, "owned"]]);
    expect((await stats(ns)).claimsByPhase).toMatchObject({ owned: 1 });
    await clearAlarm(claimStub(ns, name));
  });
});

describe("rows an earlier version left", () => {
  it("a row without a namespace gets it at the next named start; a change never staged is listed then", async () => {
    const { ns, name, acquired } = await listedClaim("g1");
    // What an earlier version could leave: a row staged before the namespace was stored, and
    // a release committed by an instance that could not stage it (its row still shows g1).
    await runInDurableObject(claimStub(ns, name), (_o, state) => {
      state.storage.sql.exec("UPDATE index_outbox SET namespace = ''");
      state.storage.sql.exec(
        "UPDATE claim SET owner_generation = '', previous_owner = 'g1', phase = 'unowned', reason = 'released', version = '2'",
      );
    });
    await restartObject(claimStub(ns, name));
    // The next start-up (a named call here) stores the namespace and stages the stored record.
    await clockAt(claimStub(ns, name), START_MS);
    await settleListing(ns, [claimStub(ns, name)]);
    expect(await listed(ns, "claims")).toMatchObject([{ phase: "unowned", ownerGeneration: "", reason: "released" }]);
    expect((await stats(ns)).claimsByPhase).toMatchObject({ unowned: 1, owned: 0 });

    // An unnamed instance now finds the namespace in the row.
    const reacquired = await post(claimUrl(ns, name, "/acquire"), { generationId: "g2", ttlMs: TTL_MS });
    expect(reacquired.status).toBe(200);
    await settleListing(ns, [claimStub(ns, name)]);
    const stub = await restartUnnamed(testEnv.CLAIMS, claimStub(ns, name));
    await fireAlarmUnnamed(stub, Math.max(acquired.expiresAtMs, reacquired.body.claim.expiresAtMs) + 1);
    await settleListing(ns);
    expect(await listed(ns, "claims")).toMatchObject([{ phase: "unowned", previousOwner: "g2", reason: "expired" }]);
    await clearAlarm(stub);
  });

  it("a shard with entries and no stored namespace, started without a name, forwards once a delivery tells it", async () => {
    const ns = unique("ns");
    const [first, second] = [unique(), unique()];
    const shardOf = (name: string) => listingShardOf("claim", name, SHARDS);
    // Two claims on one shard: names until the second lands where the first does.
    let other = second;
    while (shardOf(other) !== shardOf(first)) other = unique();
    for (const name of [first, other]) {
      await runInDurableObject(claimStub(ns, name), async (o) => {
        o.hooks.holdIndexDelivery = name === other; // the second delivers later
        expect((await o.command(name, { op: "acquire", body: { generationId: "g1", ttlMs: TTL_MS } })).status).toBe(
          200,
        );
        if (name === first) await o.flushIndex();
      });
    }
    // An earlier version stored no namespace in the shard.
    await runInDurableObject(shardStub(ns, shardOf(first)), (_o, state) => {
      state.storage.sql.exec("DELETE FROM meta WHERE key = 'namespace'");
    });
    const shard = await restartUnnamed(testEnv.INDEX_SHARDS, shardStub(ns, shardOf(first)));
    const runShardAlarm = () =>
      runInDurableObject(shard, async (o, state) => {
        await state.storage.deleteAlarm();
        await o.alarm();
      });
    // Forwarded nowhere (not to another namespace's index): the entry stays pending.
    await runShardAlarm();
    expect(await listed(ns, "claims")).toEqual([]);
    await runInDurableObject(shard, (_o, state) => {
      expect(state.storage.sql.exec("SELECT COUNT(*) AS n FROM pending").one().n).toBe(1);
    });
    // The second claim's delivery reaches the running shard and names its namespace.
    await runInDurableObject(claimStub(ns, other), async (o) => {
      o.hooks.holdIndexDelivery = false;
      await o.flushIndex();
    });
    await runShardAlarm();
    expect((await listed(ns, "claims")).map((c) => c.name).sort()).toEqual([first, other].sort());
    for (const name of [first, other]) await clearAlarm(claimStub(ns, name));
  });
});

describe("a commit that rolls back after staging", () => {
  it("leaves nothing behind: the same change, committed next, is listed", async () => {
    const ns = unique("ns");
    const name = unique();
    await runInDurableObject(claimStub(ns, name), async (o, state) => {
      o.hooks.clock = new ManualClock(START_MS);
      const acquire = { op: "acquire" as const, body: { generationId: "g1", ttlMs: TTL_MS } };
      expect((await o.command(name, acquire)).status).toBe(200);
      await o.flushIndex();
      const release = { op: "release" as const, body: { generationId: "g1", token: 1n } };
      // An event row already holding the release's version: its commit throws after staging.
      state.storage.sql.exec("INSERT INTO events (version, message) VALUES ('00000000000000000002', '{}')");
      await expect(o.command(name, release)).rejects.toThrow();
      state.storage.sql.exec("DELETE FROM events WHERE version = '00000000000000000002'");
      expect((await o.command(name, release)).status).toBe(200);
    });
    await settleListing(ns, [claimStub(ns, name)]);
    expect(await listed(ns, "claims")).toMatchObject([{ phase: "unowned", reason: "released" }]);
    expect((await stats(ns)).claimsByPhase).toMatchObject({ unowned: 1, owned: 0 });
  });
});
