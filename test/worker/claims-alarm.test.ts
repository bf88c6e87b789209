/* eslint-disable @typescript-eslint/no-unsafe-return -- watch messages are inspected loosely. */
// Expiry: driven by the alarm at the deadline (watchers hear `expired` with nobody touching
// the claim) and applied lazily on every access. Time is a ManualClock injected into the
// object, so no test sleeps. TTLs are long in real time so that workerd never fires an
// alarm on its own while the manual clock lags behind the wall clock.
import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { ManualClock, systemClock } from "../../src/core/clock.ts";
import { DELIVERY_CHECK_MS } from "../../src/durable/delivery-retry.ts";
import { claimStub, claimUrl, get, openWatch, post, unique } from "./claims-helpers.ts";

async function setup() {
  const ns = unique("ns");
  const claim = unique();
  const stub = claimStub(ns, claim);
  const clock = new ManualClock(systemClock.nowMs());
  await runInDurableObject(stub, (instance) => {
    instance.hooks.clock = clock;
  });
  const alarmAt = () => runInDurableObject(stub, (_i, state) => state.storage.getAlarm());
  /**
   * A listed change arms the alarm for its delivery check first (1 s, index-outbox.ts), no
   * later than the deadline: run that check, which re-arms for the deadline.
   */
  const passDeliveryCheck = async () => {
    expect(await alarmAt()).toBe(clock.nowMs() + DELIVERY_CHECK_MS);
    expect(await runDurableObjectAlarm(stub)).toBe(true);
  };
  return {
    ns,
    claim,
    stub,
    clock,
    alarmAt,
    passDeliveryCheck,
    post: (suffix: string, body: unknown) => post(claimUrl(ns, claim, suffix), body),
    read: () => get(claimUrl(ns, claim)),
    watch: (query = "") => openWatch(ns, claim, query),
  };
}

describe("claim expiry", { timeout: 60_000 }, () => {
  it("the alarm expires the claim at the deadline and the watcher hears `expired`", async () => {
    const c = await setup();
    const acquired = (await c.post("/acquire", { generationId: "g1", ttlMs: 60_000 })).body.claim;
    await c.passDeliveryCheck();
    expect(await c.alarmAt()).toBe(acquired.expiresAtMs + 1);
    const w = await c.watch();
    await w.next();

    // At exactly expiresAtMs the claim is still held (expiry is strict), and an early alarm
    // run changes nothing but re-arms.
    await c.clock.advance(60_000);
    expect(await runDurableObjectAlarm(c.stub)).toBe(true);
    expect(await c.alarmAt()).toBe(acquired.expiresAtMs + 1);
    expect((await c.read()).body.claim.version).toBe("1");

    await c.clock.advance(1);
    expect(await runDurableObjectAlarm(c.stub)).toBe(true);
    const event = await w.next();
    expect(event).toEqual({
      type: "event",
      reason: "expired",
      timeMs: acquired.expiresAtMs + 1,
      claim: {
        ...acquired,
        ownerGeneration: "",
        previousOwner: "g1",
        phase: "unowned",
        reason: "expired",
        version: "2",
      },
    });
    expect(await c.alarmAt()).toBeNull();

    // At-least-once delivery: running the handler again changes nothing.
    await runInDurableObject(c.stub, (instance) => instance.alarm());
    expect((await c.read()).body.claim).toEqual(event.claim);
    expect(await c.alarmAt()).toBeNull();
    w.ws.close(1000);
  });

  it("a reserved claim that expires loses owner and reservation, keeping the token", async () => {
    const c = await setup();
    await c.post("/acquire", { generationId: "old", ttlMs: 60_000 });
    const prepared = await c.post("/transfer/prepare", {
      fromGeneration: "old",
      toGeneration: "new",
      token: "1",
      ttlMs: 30_000,
    });
    await c.passDeliveryCheck();
    expect(await c.alarmAt()).toBe(prepared.body.claim.expiresAtMs + 1);
    await c.clock.advance(30_001);
    await runDurableObjectAlarm(c.stub);
    expect((await c.read()).body.claim).toMatchObject({
      phase: "unowned",
      ownerGeneration: "",
      pendingSuccessor: "",
      transferStatus: "",
      drainStatus: "",
      previousOwner: "old",
      fencingToken: "1",
      reason: "expired",
    });
  });

  it("GET applies expiry lazily, persists it and publishes it", async () => {
    const c = await setup();
    await c.post("/acquire", { generationId: "g1", ttlMs: 60_000 });
    const w = await c.watch();
    await w.next();
    await c.clock.advance(60_001);
    const read = await c.read();
    expect(read.body.claim).toMatchObject({ phase: "unowned", reason: "expired", version: "2" });
    expect(await w.next()).toMatchObject({ reason: "expired", claim: { version: "2" } });
    // Persisted: a second read is the same record.
    expect((await c.read()).body).toEqual(read.body);
    // The alarm armed for the old deadline is left in place; when it fires it finds nothing
    // to expire, changes nothing and arms no new alarm.
    expect(await runDurableObjectAlarm(c.stub)).toBe(true);
    expect((await c.read()).body).toEqual(read.body);
    expect(await c.alarmAt()).toBeNull();
    w.ws.close(1000);
  });

  it("a mutation that reveals expiry publishes `expired` before its own event", async () => {
    const c = await setup();
    await c.post("/acquire", { generationId: "g1", ttlMs: 60_000 });
    const w = await c.watch("?afterVersion=1");
    await c.clock.advance(60_001);
    const res = await c.post("/acquire", { generationId: "g2", ttlMs: 60_000 });
    expect(res.body.claim).toMatchObject({
      ownerGeneration: "g2",
      fencingToken: "2",
      previousOwner: "g1",
      version: "3",
    });
    await w.until((m) => m.length === 2);
    expect(w.messages.map((m) => [m.reason, m.claim.version])).toEqual([
      ["expired", "2"],
      ["acquired", "3"],
    ]);
    // The alarm is never later than the new owner's deadline: the old, earlier one stays
    // armed, and firing re-arms it for the new deadline without expiring anything.
    const armed = await c.alarmAt();
    expect(armed).not.toBeNull();
    expect(armed!).toBeLessThanOrEqual(Number(res.body.claim.expiresAtMs) + 1);
    expect(await runDurableObjectAlarm(c.stub)).toBe(true);
    expect((await c.read()).body.claim).toMatchObject({ ownerGeneration: "g2", version: "3" });
    expect(await c.alarmAt()).toBe(res.body.claim.expiresAtMs + 1);
    w.ws.close(1000);
    await runInDurableObject(c.stub, (_i, state) => state.storage.deleteAlarm());
  });

  it("a refused renew after expiry still persists the expiry", async () => {
    const c = await setup();
    await c.post("/acquire", { generationId: "g1", ttlMs: 60_000 });
    await c.clock.advance(60_001);
    const res = await c.post("/renew", { generationId: "g1", token: "1", ttlMs: 60_000 });
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe("not_owner");
    expect((await c.read()).body.claim).toMatchObject({ reason: "expired", version: "2" });
  });

  it("a renew that extends the lease leaves the earlier alarm, which re-arms; a release leaves a harmless one", async () => {
    const c = await setup();
    const acquired = (await c.post("/acquire", { generationId: "g1", ttlMs: 60_000 })).body.claim;
    await c.passDeliveryCheck();
    await c.clock.advance(30_000);
    const renewed = (await c.post("/renew", { generationId: "g1", token: "1", ttlMs: 120_000 })).body.claim;
    // No alarm write for an extension: the old deadline's alarm stays armed.
    expect(await c.alarmAt()).toBe(acquired.expiresAtMs + 1);
    // The old deadline passes without expiry, and the alarm moves to the renewed deadline.
    await c.clock.advance(31_000);
    expect(await runDurableObjectAlarm(c.stub)).toBe(true);
    expect((await c.read()).body.claim).toMatchObject({ phase: "owned", version: "2" });
    expect(await c.alarmAt()).toBe(renewed.expiresAtMs + 1);
    // A renew that shortens the lease moves the alarm earlier at once.
    const shortened = (await c.post("/renew", { generationId: "g1", token: "1", ttlMs: 10_000 })).body.claim;
    expect(await c.alarmAt()).toBe(shortened.expiresAtMs + 1);
    // Release leaves the alarm; firing it changes nothing and arms nothing.
    const released = (await c.post("/release", { generationId: "g1", token: "1" })).body.claim;
    expect(await runDurableObjectAlarm(c.stub)).toBe(true);
    expect((await c.read()).body.claim).toEqual(released);
    expect(await c.alarmAt()).toBeNull();
    expect(await runDurableObjectAlarm(c.stub)).toBe(false);
  });

  it("concurrent mutations leave the alarm at the last saved record's deadline", async () => {
    const c = await setup();
    await c.post("/acquire", { generationId: "g1", ttlMs: 60_000 });
    const ttls = [3_600_000, 120_000, 86_400_000, 90_000, 600_000];
    await Promise.all(ttls.map((ttlMs) => c.post("/renew", { generationId: "g1", token: "1", ttlMs })));
    const final = (await c.read()).body.claim;
    // Whatever the interleaving, the alarm is never later than the saved deadline, and
    // once it fires it is re-armed exactly for the last saved record.
    expect(await c.alarmAt()).toBeLessThanOrEqual(Number(final.expiresAtMs) + 1);
    expect(await runDurableObjectAlarm(c.stub)).toBe(true);
    expect((await c.read()).body.claim).toEqual(final);
    expect(await c.alarmAt()).toBe(final.expiresAtMs + 1);
    await runInDurableObject(c.stub, (_i, state) => state.storage.deleteAlarm());
  });
});
