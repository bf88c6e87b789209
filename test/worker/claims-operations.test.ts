// Operation ids (docs/protocol.md#claims): a retry with the same id and request replays the first response
// (status and body) with no side effect and no event; a different request under the same id
// is `operation_id_conflict`; only 2xx and 409 outcomes are remembered.
import { runInDurableObject } from "cloudflare:test";
import { afterEach, describe, expect, it } from "vitest";
import { OPERATION_RETENTION_COUNT, OPERATION_RETENTION_MS } from "../../src/core/claim-operations.ts";
import { ManualClock, systemClock } from "../../src/core/clock.ts";
import { claimStub, claimUrl, clearTrackedAlarms, get, openWatch, post, track, unique } from "./claims-helpers.ts";

const TTL = 60_000;

function fresh() {
  const ns = unique("ns");
  const claim = unique();
  track(ns, claim);
  return {
    ns,
    claim,
    post: (suffix: string, body: unknown) => post(claimUrl(ns, claim, suffix), body),
    read: async () => (await get(claimUrl(ns, claim))).body as { claim: { version: string } } | undefined,
  };
}

describe("claim operation ids", { timeout: 60_000 }, () => {
  afterEach(clearTrackedAlarms);

  it("a retried acquire replays the first response byte for byte, without a side effect or event", async () => {
    const c = fresh();
    const body = { generationId: "g1", ttlMs: TTL, operationId: "op-1" };
    const first = await c.post("/acquire", body);
    expect(first.status).toBe(200);
    // State moves on after the first call …
    const renewed = await c.post("/renew", { generationId: "g1", token: "1", ttlMs: 2 * TTL });
    const w = await openWatch(c.ns, c.claim, `?afterVersion=${renewed.body.claim.version}`);
    // … yet the retry answers with the first response and changes nothing.
    const retry = await c.post("/acquire", { ttlMs: TTL, operationId: "op-1", generationId: "g1" });
    expect(retry.status).toBe(first.status);
    expect(retry.body).toEqual(first.body);
    expect((await c.read())?.claim).toEqual(renewed.body.claim);
    // No event was published by the retry: the next thing the watcher sees is a real change.
    await c.post("/release", { generationId: "g1", token: "1" });
    const next = (await w.next()) as { reason: string };
    expect(next.reason).toBe("released");
    expect(w.messages.length).toBe(1);
    w.ws.close(1000);
  });

  it("a retried acquire-after-release does not take the claim a second time", async () => {
    const c = fresh();
    const body = { generationId: "g1", ttlMs: TTL, operationId: "op-a" };
    const first = await c.post("/acquire", body);
    await c.post("/release", { generationId: "g1", token: "1" });
    const retry = await c.post("/acquire", body);
    expect(retry.body).toEqual(first.body);
    expect((await c.read())?.claim).toMatchObject({ phase: "unowned", fencingToken: "1" });
  });

  it("the same id with a different body or route is operation_id_conflict", async () => {
    const c = fresh();
    await c.post("/acquire", { generationId: "g1", ttlMs: TTL, operationId: "op-x" });
    const before = await c.read();
    const otherBody = await c.post("/acquire", { generationId: "g1", ttlMs: TTL + 1, operationId: "op-x" });
    expect(otherBody.status).toBe(409);
    expect(otherBody.body.error).toMatchObject({ code: "operation_id_conflict", operationId: "op-x" });
    const otherRoute = await c.post("/renew", { generationId: "g1", token: "1", ttlMs: TTL, operationId: "op-x" });
    expect(otherRoute.status).toBe(409);
    expect(otherRoute.body.error.code).toBe("operation_id_conflict");
    expect(await c.read()).toEqual(before);
  });

  it("409 refusals are remembered: the retry gets the same refusal even after the claim frees up", async () => {
    const c = fresh();
    await c.post("/acquire", { generationId: "g1", ttlMs: TTL });
    const body = { generationId: "g2", ttlMs: TTL, operationId: "op-held" };
    const refused = await c.post("/acquire", body);
    expect(refused.status).toBe(409);
    expect(refused.body.error.code).toBe("claim_held");
    await c.post("/release", { generationId: "g1", token: "1" });
    const retry = await c.post("/acquire", body);
    expect(retry.status).toBe(409);
    expect(retry.body).toEqual(refused.body);
    expect((await c.read())?.claim).toMatchObject({ phase: "unowned" });
  });

  it("400s are not remembered: the id can be used again with a valid request", async () => {
    const c = fresh();
    const bad = await c.post("/acquire", { generationId: "g1", ttlMs: 1, operationId: "op-400" });
    expect(bad.status).toBe(400);
    const acquired = await c.post("/acquire", { generationId: "g1", ttlMs: TTL, operationId: "op-p" });
    expect(acquired.status).toBe(200);
    // A 400 decided by the machine (toGeneration = from) is not remembered either.
    const self = { fromGeneration: "g1", toGeneration: "g1", token: "1", ttlMs: TTL, operationId: "op-self" };
    expect((await c.post("/transfer/prepare", self)).status).toBe(400);
    const fixed = await c.post("/transfer/prepare", { ...self, toGeneration: "g2" });
    expect(fixed.status).toBe(200);
    const ok = await c.post("/acquire", { generationId: "g1", ttlMs: TTL, operationId: "op-400" });
    expect(ok.status).toBe(200);
  });

  it("404s are not remembered", async () => {
    const c = fresh();
    const body = { generationId: "g1", token: "1", ttlMs: TTL, operationId: "op-404" };
    expect((await c.post("/renew", body)).status).toBe(404);
    await c.post("/acquire", { generationId: "g1", ttlMs: TTL });
    expect((await c.post("/renew", body)).status).toBe(200);
  });

  it("operation ids are scoped to one claim", async () => {
    const a = fresh();
    const b = fresh();
    const body = { generationId: "g1", ttlMs: TTL, operationId: "shared" };
    expect((await a.post("/acquire", body)).status).toBe(200);
    const other = await b.post("/acquire", { ...body, generationId: "g2" });
    expect(other.status).toBe(200);
    expect(other.body.claim.ownerGeneration).toBe("g2");
  });

  it("every mutation route replays", async () => {
    const c = fresh();
    const steps: [string, Record<string, unknown>][] = [
      ["/acquire", { generationId: "a", ttlMs: TTL }],
      ["/renew", { generationId: "a", token: "1", ttlMs: TTL }],
      ["/transfer/prepare", { fromGeneration: "a", toGeneration: "b", token: "1", ttlMs: TTL }],
      ["/transfer/abort", { fromGeneration: "a", toGeneration: "b", expectedToken: "1" }],
      ["/transfer/prepare", { fromGeneration: "a", toGeneration: "b", token: "1", ttlMs: TTL }],
      ["/transfer/commit", { fromGeneration: "a", toGeneration: "b", expectedToken: "1", ttlMs: TTL }],
      ["/release", { generationId: "b", token: "2" }],
    ];
    for (const [i, [route, body]] of steps.entries()) {
      const first = await c.post(route, { ...body, operationId: `step-${i}` });
      expect(first.status).toBe(200);
      const version = (await c.read())?.claim.version;
      const again = await c.post(route, { ...body, operationId: `step-${i}` });
      expect(again).toMatchObject({ status: 200, body: first.body });
      expect((await c.read())?.claim.version).toBe(version);
    }
  });

  it("keeps operation records until both 1,000 newer ones exist and an hour has passed", async () => {
    const c = fresh();
    const stub = claimStub(c.ns, c.claim);
    const clock = new ManualClock(systemClock.nowMs());
    const count = OPERATION_RETENTION_COUNT + 1;
    const first = await runInDurableObject(stub, async (instance) => {
      instance.hooks.clock = clock;
      const acquired = await instance.command(c.claim, {
        op: "acquire",
        body: { generationId: "g1", ttlMs: 86_400_000, operationId: "op-0" },
      });
      for (let i = 1; i < count; i++) {
        await instance.command(c.claim, {
          op: "renew",
          body: { generationId: "g1", token: 1n, ttlMs: 86_400_000, operationId: `op-${i}` },
        });
      }
      return acquired;
    });
    // 1,001 records, all younger than an hour: the oldest still replays.
    const replayed = await c.post("/acquire", { generationId: "g1", ttlMs: 86_400_000, operationId: "op-0" });
    expect(replayed.body).toEqual(first.body);

    // An hour later, one more record: the oldest now has ≥ 1,000 newer and is over an hour old.
    await clock.advance(OPERATION_RETENTION_MS + 1);
    await c.post("/renew", { generationId: "g1", token: "1", ttlMs: 86_400_000, operationId: "op-late" });
    const rows = await runInDurableObject(
      stub,
      (_i, state) => state.storage.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM operations").one().n,
    );
    expect(rows).toBe(OPERATION_RETENTION_COUNT);
    // op-500 is within the newest 1,000: still replayed (renew number 500 made version 501).
    const kept = await c.post("/renew", { generationId: "g1", token: "1", ttlMs: 86_400_000, operationId: "op-500" });
    expect(kept.body.claim.version).toBe("501");
    // op-0 was pruned: the same request now executes afresh (a same-owner acquire, reason renewed).
    const again = await c.post("/acquire", { generationId: "g1", ttlMs: 86_400_000, operationId: "op-0" });
    expect(again.status).toBe(200);
    // (At the same instant as op-late with the same ttl, the extension changes nothing: version stays.)
    expect(again.body.claim).toMatchObject({ reason: "renewed", version: "1002" });
  });
});
