// Durability: the fencing token, history and operation records survive the object being
// torn down and restarted; the token stops at 2^64−2 with `token_overflow`.
import { abortAllDurableObjects, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { afterEach, describe, expect, it } from "vitest";
import { decideClaim } from "../../src/core/claim-machine.ts";
import { ClaimStore } from "../../src/claims/store.ts";
import { systemClock } from "../../src/core/clock.ts";
import { MAX_FENCING_TOKEN } from "../../src/protocol/counter.ts";
import { claimStub, claimUrl, clearTrackedAlarms, get, openWatch, post, track, unique } from "./claims-helpers.ts";
import { restartObject } from "./object-helpers.ts";

const TTL = 60_000;

function fresh() {
  const ns = unique("ns");
  const claim = unique();
  track(ns, claim);
  return {
    ns,
    claim,
    stub: () => claimStub(ns, claim),
    post: (suffix: string, body: unknown) => post(claimUrl(ns, claim, suffix), body),
    read: () => get(claimUrl(ns, claim)),
  };
}

/** Overwrite the stored token (test seeding only: production never writes it this way). */
async function seedToken(stub: ReturnType<typeof claimStub>, token: bigint): Promise<void> {
  await runInDurableObject(stub, (_instance, state) => {
    state.storage.sql.exec("UPDATE claim SET fencing_token = ? WHERE id = 1", token.toString());
  });
}

describe("claim durability", { timeout: 60_000 }, () => {
  afterEach(clearTrackedAlarms);

  it("the token, history and operation records survive a restart of every object", async () => {
    const c = fresh();
    const first = await c.post("/acquire", { generationId: "g1", ttlMs: TTL, operationId: "op-1" });
    await c.post("/release", { generationId: "g1", token: "1" });
    await abortAllDurableObjects();

    const second = await c.post("/acquire", { generationId: "g2", ttlMs: TTL });
    expect(second.body.claim).toMatchObject({ fencingToken: "2", previousOwner: "g1", version: "3" });
    await abortAllDurableObjects();

    expect((await c.read()).body.claim).toEqual(second.body.claim);
    const retry = await c.post("/acquire", { generationId: "g1", ttlMs: TTL, operationId: "op-1" });
    expect(retry.body).toEqual(first.body);
    const w = await openWatch(c.ns, c.claim, "?afterVersion=0");
    await w.until((m) => m.length === 3);
    expect(w.messages.map((m: { reason: string }) => m.reason)).toEqual(["acquired", "released", "acquired"]);
    w.ws.close(1000);
  });

  it("the alarm survives a restart and still expires the claim", async () => {
    const c = fresh();
    const acquired = (await c.post("/acquire", { generationId: "g1", ttlMs: TTL })).body.claim as {
      expiresAtMs: number;
    };
    await abortAllDurableObjects();
    const alarmAt = () => runInDurableObject(c.stub(), (_i, state) => state.storage.getAlarm());
    const alarm = await alarmAt();
    expect(alarm).not.toBeNull();
    expect(alarm!).toBeLessThanOrEqual(acquired.expiresAtMs + 1);
    // The listing's delivery check (1 s after the acquire) may not have fired yet: running it
    // re-arms the surviving alarm for the claim's deadline.
    if (alarm !== acquired.expiresAtMs + 1) expect(await runDurableObjectAlarm(c.stub())).toBe(true);
    expect(await alarmAt()).toBe(acquired.expiresAtMs + 1);
  });

  it("the schema migration is idempotent: a restarted object keeps its rows", async () => {
    const c = fresh();
    await c.post("/acquire", { generationId: "g1", ttlMs: TTL });
    await abortAllDurableObjects();
    const version = await runInDurableObject(c.stub(), (_i, state) => {
      const rows = state.storage.sql
        .exec<{ value: string }>("SELECT value FROM meta WHERE key = 'schema_version'")
        .toArray();
      return rows[0]?.value;
    });
    expect(version).toBe("5");
    expect((await c.read()).body.claim.fencingToken).toBe("1");
  });

  it("acquire issues 2^64−2 as the last token, then refuses with token_overflow", async () => {
    const c = fresh();
    await c.post("/acquire", { generationId: "g1", ttlMs: TTL });
    await c.post("/release", { generationId: "g1", token: "1" });
    await seedToken(c.stub(), MAX_FENCING_TOKEN - 1n);

    const last = await c.post("/acquire", { generationId: "g2", ttlMs: TTL });
    expect(last.status).toBe(200);
    expect(last.body.claim.fencingToken).toBe("18446744073709551614");
    await c.post("/release", { generationId: "g2", token: "18446744073709551614" });
    await abortAllDurableObjects();

    const refused = await c.post("/acquire", { generationId: "g3", ttlMs: TTL });
    expect(refused.status).toBe(409);
    expect(refused.body.error.code).toBe("token_overflow");
    expect((await c.read()).body.claim).toMatchObject({ phase: "unowned", fencingToken: "18446744073709551614" });
  });

  it("commit at the maximum token refuses with token_overflow and keeps the reservation", async () => {
    const c = fresh();
    await c.post("/acquire", { generationId: "g1", ttlMs: TTL });
    await seedToken(c.stub(), MAX_FENCING_TOKEN);
    const max = MAX_FENCING_TOKEN.toString();
    const prepared = await c.post("/transfer/prepare", {
      fromGeneration: "g1",
      toGeneration: "g2",
      token: max,
      ttlMs: TTL,
    });
    expect(prepared.status).toBe(200);
    const refused = await c.post("/transfer/commit", {
      fromGeneration: "g1",
      toGeneration: "g2",
      expectedToken: max,
      ttlMs: TTL,
    });
    expect(refused.status).toBe(409);
    expect(refused.body.error.code).toBe("token_overflow");
    expect((await c.read()).body.claim).toMatchObject({
      phase: "reserved",
      ownerGeneration: "g1",
      pendingSuccessor: "g2",
      fencingToken: max,
    });
    // The owner can still renew and release with the maximum token.
    expect((await c.post("/renew", { generationId: "g1", token: max, ttlMs: TTL })).status).toBe(200);
    expect((await c.post("/release", { generationId: "g1", token: max })).status).toBe(200);
  });

  it("the guarded token update refuses a decision made from a stale token, writing nothing", async () => {
    const c = fresh();
    await c.post("/acquire", { generationId: "g1", ttlMs: TTL });
    await c.post("/release", { generationId: "g1", token: "1" });
    const outcome = await runInDurableObject(c.stub(), (_instance, state) => {
      const store = new ClaimStore(state.storage);
      store.open();
      const stored = store.load()!;
      // A decision made from an older copy (token 0) must not land on the stored token 1.
      const stale = { ...stored, fencingToken: 0n, version: stored.version };
      const step = decideClaim(
        stored.name,
        stale,
        { kind: "acquire", generationId: "g2", ttlMs: TTL },
        systemClock.nowMs(),
      );
      try {
        store.commit(stale, step, undefined);
        return "committed";
      } catch (err) {
        return (err as { code?: string }).code;
      }
    });
    expect(outcome).toBe("internal");
    expect((await c.read()).body.claim).toMatchObject({ fencingToken: "1", phase: "unowned", version: "2" });
  });

  it("a first write that fails rolls its migration back too; the next write creates the schema", async () => {
    const c = fresh();
    const outcome = await runInDurableObject(c.stub(), (_instance, state) => {
      const tables = () => state.storage.sql.exec("SELECT name FROM sqlite_master WHERE type = 'table'").toArray();
      const store = new ClaimStore(state.storage);
      store.open();
      const acquire = { kind: "acquire", generationId: "g1", ttlMs: TTL } as const;
      const step = decideClaim(c.claim, undefined, acquire, systemClock.nowMs());
      // A decision the guarded token update refuses (a token that skips ahead).
      const broken = { ...step, next: { ...step.next!, fencingToken: 5n } };
      let code: unknown;
      try {
        store.commit(undefined, broken, undefined);
      } catch (err) {
        code = (err as { code?: string }).code;
      }
      const afterFailure = tables();
      store.commit(undefined, step, undefined);
      return { code, afterFailure, token: store.load()?.fencingToken };
    });
    expect(outcome).toEqual({ code: "internal", afterFailure: [], token: 1n });
    await restartObject(c.stub()); // the object's own store instance saw no tables at start-up
    expect((await c.read()).body.claim).toMatchObject({ fencingToken: "1", ownerGeneration: "g1" });
  });

  it("an object addressed under another claim name refuses with internal instead of mixing claims", async () => {
    const c = fresh();
    await c.post("/acquire", { generationId: "g1", ttlMs: TTL });
    const res = await runInDurableObject(c.stub(), async (instance) => {
      try {
        return await instance.get("someone-else");
      } catch (err) {
        return { status: 500, body: { code: (err as { code?: string }).code } };
      }
    });
    expect(res).toMatchObject({ status: 500, body: { code: "internal" } });
  });

  it("reading or watching a claim never created leaves its object's storage empty", async () => {
    const c = fresh();
    expect((await c.read()).status).toBe(404);
    const w = await openWatch(c.ns, c.claim, "?afterVersion=0");
    const refused = await c.post("/renew", { generationId: "g1", token: "1", ttlMs: TTL });
    expect(refused.status).toBe(404);
    const tables = await runInDurableObject(c.stub(), (_i, state) =>
      state.storage.sql.exec<{ name: string }>("SELECT name FROM sqlite_master WHERE type = 'table'").toArray(),
    );
    expect(tables).toEqual([]);
    // The first write creates the schema and the claim; the open watcher hears it.
    await c.post("/acquire", { generationId: "g1", ttlMs: TTL });
    expect(await w.next()).toMatchObject({ type: "event", reason: "acquired", claim: { version: "1" } });
    w.ws.close(1000);
  });
});
