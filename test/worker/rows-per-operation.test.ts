// Rows per operation: what each claim, generation and coord operation reads and writes in
// its object's SQLite database, from the storage API's own cursor counters (rowsRead /
// rowsWritten, the figures Durable Object SQL storage is billed on). docs/performance.md
// "Rows per operation" is this table; a change that moves a figure must update both.
//
// Every mutation that changes what the listing shows also writes the outbox row
// (durable/index-outbox.ts) in its one transaction: +1 row read (the upsert's conflict check)
// and +1 row written; a renewal or keepalive does not (the listing may trail deadlines). A
// release, which leaves no deadline, arms the alarm that makes sure its entry left. Delivery
// to the listing shard is measured on its own ("index delivery": after the commit, off the
// mutation's path: the row read, and the delivered seq written back); the metered mutations
// run with delivery held back so the figures stay exact.
//
// Also checked for every mutation: exactly one `transactionSync` (the one commit of the
// five steps), no row written outside it, and no key-value write. Figures are exact: the
// state before each operation is built the same way every run.
import { exports } from "cloudflare:workers";
import { testEnv } from "./test-env.ts";
import { runInDurableObject } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import type { ClaimObject } from "./test-entry.ts";
import type { ClaimRequest } from "../../src/protocol/claim-routes.ts";
import type { ScopeObject } from "./test-entry.ts";
import type { GenerationObject } from "./test-entry.ts";
import { objectName } from "../../src/durable/object-names.ts";
import type { ScopeId } from "../../src/protocol/coord.ts";
import { RETAINED_EVENTS } from "../../src/protocol/watch.ts";
import { PRUNE_BATCH_EVENTS } from "../../src/durable/history-pruning.ts";
import { churn, claimStub, unique } from "./claims-helpers.ts";
import { restartObject } from "./object-helpers.ts";
import { type StorageCost, metered } from "./sql-meter.ts";

beforeAll(async () => {
  await exports.default.fetch("http://x/healthz");
}, 60_000);

/** One row of the table: rows read, rows written, commits (transactions), alarm writes. */
type Row = [read: number, written: number, commits: number, alarms: number];

function row(cost: StorageCost): Row {
  // A second commit of one mutation would show here, as would a stray key-value write.
  expect(cost.writesOutsideTransaction).toBe(0);
  expect(cost.kvWrites).toBe(0);
  return [cost.rowsRead, cost.rowsWritten, cost.transactions, cost.alarmWrites];
}

const TTL_MS = 60_000;

/**
 * Deliver what the object's outbox holds, then hold further deliveries back, so that a metered
 * call measures the mutation alone (delivery is measured on its own: "index delivery").
 */
async function settleIndex(stub: DurableObjectStub<ClaimObject | ScopeObject | GenerationObject>): Promise<void> {
  await runInDurableObject(stub, async (o: ClaimObject | ScopeObject | GenerationObject) => {
    o.hooks.holdIndexDelivery = false;
    await o.flushIndex();
    o.hooks.holdIndexDelivery = true;
  });
}

/**
 * What delivering the staged entry to its listing shard costs the object (the shard's cost is
 * apart): after the shard acknowledged it, the delivered seq is written back, one row in a
 * statement of its own (so a restarted instance re-sends nothing).
 */
async function deliveryRow(stub: DurableObjectStub<ClaimObject | ScopeObject | GenerationObject>): Promise<Row> {
  const { cost } = await metered(stub, async (o: ClaimObject | ScopeObject | GenerationObject) => {
    o.hooks.holdIndexDelivery = false;
    await o.flushIndex();
  });
  expect(cost.writesOutsideTransaction).toBe(1);
  expect(cost.kvWrites).toBe(0);
  return [cost.rowsRead, cost.rowsWritten, cost.transactions, cost.alarmWrites];
}

/** Entries a retained history holds now: a claim's `events`, a scope's `publish_history`. */
async function retained(
  stub: DurableObjectStub<ClaimObject | ScopeObject>,
  table: "events" | "publish_history",
): Promise<number> {
  return runInDurableObject(
    stub,
    (_o: ClaimObject | ScopeObject, state) =>
      state.storage.sql.exec<{ n: number }>(`SELECT COUNT(*) AS n FROM ${table}`).one().n,
  );
}

/** Run one claim command and return its status and cost. */
async function claimOp(stub: DurableObjectStub<ClaimObject>, claim: string, request: ClaimRequest) {
  await settleIndex(stub);
  const { result, cost } = await metered(stub, (o) => o.command(claim, request));
  return {
    status: result.status,
    body: result.body as { claim: { fencingToken: string; version: string } },
    row: row(cost),
  };
}

/** Every claim operation on one claim, in an order that makes each one succeed. */
async function claimTable(stub: DurableObjectStub<ClaimObject>, claim: string): Promise<Record<string, Row>> {
  const rows: Record<string, Row> = {};
  const op = async (label: string, request: ClaimRequest, status = 200) => {
    const r = await claimOp(stub, claim, request);
    expect(r.status, label).toBe(status);
    rows[label] = r.row;
    return BigInt(r.body.claim.fencingToken);
  };
  const t1 = await op("acquire", { op: "acquire", body: { generationId: "g1", ttlMs: TTL_MS } });
  await op("renew", { op: "renew", body: { generationId: "g1", token: t1, ttlMs: TTL_MS } });
  await settleIndex(stub);
  const got = await metered(stub, (o) => o.get(claim));
  rows["get"] = row(got.cost);
  const move = { fromGeneration: "g1", toGeneration: "g2" };
  await op("prepare", { op: "prepare", body: { ...move, token: t1, ttlMs: TTL_MS } });
  await op("abort", { op: "abort", body: { ...move, expectedToken: t1 } });
  await op("transfer/prepare", { op: "prepare", body: { ...move, token: t1, ttlMs: TTL_MS } });
  const t2 = await op("commit", { op: "commit", body: { ...move, expectedToken: t1, ttlMs: TTL_MS } });
  await op("release", { op: "release", body: { generationId: "g2", token: t2 } });
  const body = { generationId: "g3", ttlMs: TTL_MS, operationId: `op-${t2}` };
  const t3 = await op("acquire with operationId", { op: "acquire", body });
  await op("acquire replayed by operationId", { op: "acquire", body });
  await op("release ", { op: "release", body: { generationId: "g3", token: t3 } });
  delete rows["transfer/prepare"];
  delete rows["release "];
  rows["index delivery (after the commit)"] = await deliveryRow(stub);
  return rows;
}

describe("rows per claim operation", () => {
  it("a new claim: the first acquire creates the tables", async () => {
    const claim = unique();
    const stub = claimStub(unique("ns"), claim);
    const r = await claimOp(stub, claim, { op: "acquire", body: { generationId: "g1", ttlMs: TTL_MS } });
    // The schema's migrations (five of them since bound claims and the outbox's namespace) run inside this first write.
    expect(r.row).toEqual([33, 19, 1, 1]);
    await runInDurableObject(stub, (_o, state) => state.storage.deleteAlarm());
  });

  it("a claim with a short history", async () => {
    const claim = unique();
    const stub = claimStub(unique("ns"), claim);
    await churn(stub, claim, 1);
    expect(await claimTable(stub, claim)).toEqual({
      acquire: [4, 3, 1, 0],
      renew: [3, 1, 1, 0],
      get: [1, 0, 0, 0],
      prepare: [4, 3, 1, 0],
      abort: [4, 3, 1, 0],
      commit: [4, 3, 1, 0],
      release: [4, 3, 1, 0],
      "acquire with operationId": [7, 6, 1, 0],
      "acquire replayed by operationId": [1, 0, 0, 0],
      "index delivery (after the commit)": [2, 1, 0, 0],
    });
    await runInDurableObject(stub, (_o, state) => state.storage.deleteAlarm());
  });

  it("a claim whose history is full costs what a short one does between prunes", async () => {
    const claim = unique();
    const stub = claimStub(unique("ns"), claim);
    // 320 events: the last one pruned the 64 beyond the bound, so 256 are retained and the
    // table's events all fall before the next prune.
    await churn(stub, claim, (RETAINED_EVENTS + PRUNE_BATCH_EVENTS) / 2);
    expect(await retained(stub, "events")).toBe(RETAINED_EVENTS);
    expect(await claimTable(stub, claim)).toEqual({
      acquire: [4, 3, 1, 0],
      renew: [3, 1, 1, 0],
      get: [1, 0, 0, 0],
      prepare: [4, 3, 1, 0],
      abort: [4, 3, 1, 0],
      commit: [4, 3, 1, 0],
      release: [4, 3, 1, 0],
      "acquire with operationId": [7, 6, 1, 0],
      "acquire replayed by operationId": [1, 0, 0, 0],
      "index delivery (after the commit)": [2, 1, 0, 0],
    });
    await runInDurableObject(stub, (_o, state) => state.storage.deleteAlarm());
  });

  it("the pruning commit: one per 64 events, deleting them in one statement with one meta write", async () => {
    const claim = unique();
    const stub = claimStub(unique("ns"), claim);
    // 318 retained: the next event is the 63rd beyond the bound (no prune), the one after the 64th.
    await churn(stub, claim, (RETAINED_EVENTS + PRUNE_BATCH_EVENTS) / 2 + PRUNE_BATCH_EVENTS / 2 - 1);
    expect(await retained(stub, "events")).toBe(RETAINED_EVENTS + PRUNE_BATCH_EVENTS - 2);
    const a = await claimOp(stub, claim, { op: "acquire", body: { generationId: "g1", ttlMs: TTL_MS } });
    expect(a.row).toEqual([4, 3, 1, 0]);
    const token = BigInt(a.body.claim.fencingToken);
    const r = await claimOp(stub, claim, { op: "release", body: { generationId: "g1", token } });
    expect(r.status).toBe(200);
    // A release's own [4, 3], plus: the 64 doomed rows read twice (the cutoff's SELECT, the
    // DELETE) and 2 more (a prune of one event, as every full-history event paid before
    // batching, read 1 + 1 + 2), the 64 deleted and `events_pruned_through` written.
    expect(r.row).toEqual([4 + 2 * PRUNE_BATCH_EVENTS + 2, 3 + PRUNE_BATCH_EVENTS + 1, 1, 0]);
    expect(await retained(stub, "events")).toBe(RETAINED_EVENTS);
    const prunedThrough = await runInDurableObject(
      stub,
      (_o, state) =>
        state.storage.sql.exec<{ value: string }>("SELECT value FROM meta WHERE key = 'events_pruned_through'").one()
          .value,
    );
    expect(BigInt(prunedThrough)).toBe(BigInt(r.body.claim.version) - BigInt(RETAINED_EVENTS));
    await runInDurableObject(stub, (_o, state) => state.storage.deleteAlarm());
  });

  it("after a restart the retained events are counted once at start-up, and pruning stays exact", async () => {
    const ns = unique("ns");
    const claim = unique();
    // 318 retained, as above; a restart must count them so that the second event prunes.
    await churn(claimStub(ns, claim), claim, (RETAINED_EVENTS + PRUNE_BATCH_EVENTS) / 2 + PRUNE_BATCH_EVENTS / 2 - 1);
    await restartObject(claimStub(ns, claim));
    const stub = claimStub(ns, claim);
    const a = await claimOp(stub, claim, { op: "acquire", body: { generationId: "g1", ttlMs: TTL_MS } });
    // As many as a warm instance: the outbox row the new instance read at start-up (to send
    // what a previous one left undelivered) also serves the acquire's staging.
    expect(a.row).toEqual([4, 3, 1, 0]);
    expect(await retained(stub, "events")).toBe(RETAINED_EVENTS + PRUNE_BATCH_EVENTS - 1);
    const token = BigInt(a.body.claim.fencingToken);
    expect((await claimOp(stub, claim, { op: "release", body: { generationId: "g1", token } })).status).toBe(200);
    expect(await retained(stub, "events")).toBe(RETAINED_EVENTS);
    await runInDurableObject(stub, (_o, state) => state.storage.deleteAlarm());
  });

  it("reading a claim that was never created reads and writes nothing", async () => {
    const claim = unique();
    const { result, cost } = await metered(claimStub(unique("ns"), claim), (o) => o.get(claim));
    expect(result.status).toBe(404);
    expect(row(cost)).toEqual([0, 0, 0, 0]);
  });
});

describe("rows per generation operation", () => {
  it("register, register again, state change, get", async () => {
    const id = `gen-${crypto.randomUUID()}`;
    const stub: DurableObjectStub<GenerationObject> = testEnv.GENERATIONS.getByName(
      objectName(unique("ns"), "generation", id),
    );
    const rows: Record<string, Row> = {};
    const body = { id, service: "api", instanceId: "i-1" };
    await settleIndex(stub);
    const first = await metered(stub, (o) => o.register(body));
    expect(first.result.status).toBe(200);
    rows["register (new)"] = row(first.cost);
    await settleIndex(stub);
    const again = await metered(stub, (o) => o.register(body));
    rows["register (again)"] = row(again.cost);
    await settleIndex(stub);
    const patched = await metered(stub, (o) => o.patch(id, { state: "standby" }));
    expect(patched.result.status).toBe(200);
    rows["state"] = row(patched.cost);
    rows["index delivery (after the commit)"] = await deliveryRow(stub);
    await settleIndex(stub);
    const got = await metered(stub, (o) => o.get(id));
    rows["get"] = row(got.cost);
    // The new generation arms its delivery-check alarm; the state change finds it still armed.
    expect(rows).toEqual({
      // The schema's migrations (the lease's columns and tables since sessions, the outbox's
      // namespace, the lease's promise ttls) run inside the first write.
      "register (new)": [25, 17, 1, 1],
      "register (again)": [1, 0, 0, 0],
      state: [3, 2, 1, 0],
      "index delivery (after the commit)": [2, 1, 0, 0],
      get: [1, 0, 0, 0],
    });
  });
});

/** Every coord operation on one object-store scope. */
async function coordTable(stub: DurableObjectStub<ScopeObject>, scope: ScopeId): Promise<Record<string, Row>> {
  const rows: Record<string, Row> = {};
  const acquire = async (label: string) => {
    await settleIndex(stub);
    const r = await metered(stub, (o) =>
      o.acquire(scope, { participantId: "p", ttlMs: TTL_MS, waitMs: 0, waiterId: crypto.randomUUID() }),
    );
    expect(r.result.status, label).toBe(201);
    rows[label] = row(r.cost);
    return (r.result.body as { lease: { leaseId: string } }).lease.leaseId;
  };
  const leaseId = await acquire("acquire");
  await settleIndex(stub);
  const kept = await metered(stub, (o) => o.keepalive(scope, leaseId, TTL_MS));
  expect(kept.result.status).toBe(200);
  rows["keepalive"] = row(kept.cost);
  await settleIndex(stub);
  const published = await metered(stub, (o) => o.publish(scope, leaseId, { root: { n: 1 } }));
  expect(published.result.status).toBe(200);
  rows["publish"] = row(published.cost);
  await settleIndex(stub);
  const snap = await metered(stub, (o) => o.snapshot(scope));
  expect(snap.result.status).toBe(200);
  rows["snapshot"] = row(snap.cost);
  await settleIndex(stub);
  const released = await metered(stub, (o) => o.release(scope, leaseId));
  expect(released.result.status).toBe(204);
  rows["release"] = row(released.cost);
  rows["index delivery (after the commit)"] = await deliveryRow(stub);
  return rows;
}

/** `n` publishes under one lease, released afterwards. */
async function publishMany(stub: DurableObjectStub<ScopeObject>, scope: ScopeId, n: number): Promise<void> {
  await runInDurableObject(stub, async (o: ScopeObject) => {
    const granted = await o.acquire(scope, { participantId: "p", ttlMs: TTL_MS, waitMs: 0, waiterId: "w" });
    const leaseId = (granted.body as { lease: { leaseId: string } }).lease.leaseId;
    for (let i = 0; i < n; i++) await o.publish(scope, leaseId, { root: i });
    await o.release(scope, leaseId);
  });
}

function newScope(): { scope: ScopeId; stub: DurableObjectStub<ScopeObject> } {
  const ns = unique("ns");
  const scope = { volumeId: unique("vol"), objectStoreId: unique("store"), key: "" };
  return { scope, stub: testEnv.SCOPES.getByName(objectName(ns, "scope", scope.volumeId, scope.objectStoreId, "")) };
}

describe("rows per coord operation", () => {
  it("a new scope, then the same operations again", async () => {
    const { scope, stub } = newScope();
    expect(await coordTable(stub, scope)).toEqual({
      acquire: [6, 3, 1, 1],
      keepalive: [3, 1, 1, 0],
      publish: [6, 4, 1, 0],
      snapshot: [0, 0, 0, 0],
      // The acquire's delivery check (1 s) is still armed: the release's needs no write.
      release: [4, 2, 1, 0],
      "index delivery (after the commit)": [2, 1, 0, 0],
    });
    expect(await coordTable(stub, scope)).toEqual({
      acquire: [4, 2, 1, 0],
      keepalive: [3, 1, 1, 0],
      publish: [6, 4, 1, 0],
      snapshot: [0, 0, 0, 0],
      release: [4, 2, 1, 0],
      "index delivery (after the commit)": [2, 1, 0, 0],
    });
    await runInDurableObject(stub, (_o, state) => state.storage.deleteAlarm());
  });

  it("a scope whose publish history is full costs what a short one does between prunes", async () => {
    const { scope, stub } = newScope();
    // 320 publishes: the last one pruned the 64 beyond the bound, so 256 are retained.
    await publishMany(stub, scope, RETAINED_EVENTS + PRUNE_BATCH_EVENTS);
    expect(await retained(stub, "publish_history")).toBe(RETAINED_EVENTS);
    expect(await coordTable(stub, scope)).toEqual({
      acquire: [4, 2, 1, 0],
      keepalive: [3, 1, 1, 0],
      publish: [6, 4, 1, 0],
      snapshot: [0, 0, 0, 0],
      release: [4, 2, 1, 0],
      "index delivery (after the commit)": [2, 1, 0, 0],
    });
    await runInDurableObject(stub, (_o, state) => state.storage.deleteAlarm());
  });

  it("the pruning publish: one per 64, deleting them in one statement", async () => {
    const { scope, stub } = newScope();
    await publishMany(stub, scope, RETAINED_EVENTS + PRUNE_BATCH_EVENTS - 1);
    const granted = await runInDurableObject(stub, (o: ScopeObject) =>
      o.acquire(scope, { participantId: "p", ttlMs: TTL_MS, waitMs: 0, waiterId: "w" }),
    );
    const leaseId = (granted.body as { lease: { leaseId: string } }).lease.leaseId;
    await settleIndex(stub);
    const published = await metered(stub, (o) => o.publish(scope, leaseId, { root: "the 320th" }));
    expect(published.result.status).toBe(200);
    // A publish's own [6, 4], plus the 64 oldest read and deleted by one DELETE (one more
    // read: the row past the range's end).
    expect(row(published.cost)).toEqual([6 + PRUNE_BATCH_EVENTS + 1, 4 + PRUNE_BATCH_EVENTS, 1, 0]);
    expect(await retained(stub, "publish_history")).toBe(RETAINED_EVENTS);
    await runInDurableObject(stub, async (o: ScopeObject, state) => {
      await o.release(scope, leaseId);
      await state.storage.deleteAlarm();
    });
  });
});
