// The generation's lease in its Durable Object (docs/protocol.md#sessions): the alarm ends a
// lease nobody kept and delivers the end to every bound claim (watchers hear `expired`), a
// keepalive of a ttl the row already promises writes no row, a restarted object keeps the
// lease to its first read + ttl (written once), and the lease channel keeps the lease with
// pings the runtime answers. The generation's clock is a ManualClock; real ttls are long so
// no real alarm fires mid-test.
import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { ManualClock, systemClock } from "../../src/core/clock.ts";
import { noticeAtMs } from "../../src/core/generation-lease.ts";
import { DELIVERY_CHECK_MS } from "../../src/durable/delivery-retry.ts";
import { objectName } from "../../src/durable/object-names.ts";
import { claimUrl, get, openWatch, post, unique, WRITE } from "./claims-helpers.ts";
import { hibernate, restartObject } from "./object-helpers.ts";
import { openWatchSocket, routerCall } from "./router-client.ts";
import { metered } from "./sql-meter.ts";
import { testEnv } from "./test-env.ts";
import type { GenerationObject } from "./test-entry.ts";

const TTL = 60_000;

/** Wait (bounded) until the object's alarm is armed no earlier than `atMs`: alarms the runtime fires by itself settle first. */
async function untilAlarmFrom(stub: DurableObjectStub<GenerationObject>, atMs: number): Promise<void> {
  const armed = async () => (await runInDurableObject(stub, (_i, state) => state.storage.getAlarm())) ?? 0;
  for (let i = 0; i < 200 && (await armed()) < atMs; i++) await new Promise((resolve) => setTimeout(resolve, 10));
  expect(await armed()).toBeGreaterThanOrEqual(atMs);
}

/** `behindMs`: how far the object's manual clock starts behind the runtime's (which stamps pings). */
async function setup(behindMs = 0) {
  const ns = unique("ns");
  const id = unique("g");
  const base = `http://x/v1/ns/${encodeURIComponent(ns)}/generations`;
  const url = `${base}/${encodeURIComponent(id)}`;
  expect((await post(base, { id, service: "svc", instanceId: "i" })).status).toBe(200);
  const stubOf = (): DurableObjectStub<GenerationObject> =>
    testEnv.GENERATIONS.getByName(objectName(ns, "generation", id));
  const clock = new ManualClock(systemClock.nowMs() - behindMs);
  const installClock = () =>
    runInDurableObject(stubOf(), (instance) => {
      instance.hooks.clock = clock;
    });
  await installClock();
  return {
    ns,
    id,
    url,
    clock,
    stubOf,
    installClock,
    keepalive: (ttlMs = TTL) => post(`${url}/keepalive`, { ttlMs }),
    read: () => get(url),
  };
}

describe("the generation's lease", { timeout: 60_000 }, () => {
  it("the alarm ends a lease nobody kept and every bound claim's watcher hears expired", async () => {
    const g = await setup();
    const lease = (await g.keepalive()).body.generation as { leaseExpiresAtMs: number; leaseEpoch: string };
    expect(lease).toMatchObject({ leaseEpoch: "1" });
    const claims = [unique(), unique(), unique()];
    const watchers = [];
    for (const claim of claims) {
      const acquired = await post(claimUrl(g.ns, claim, "/acquire"), { generationId: g.id, bound: true });
      expect(acquired.body.claim).toMatchObject({ bound: true, leaseEpoch: "1", ownerGeneration: g.id });
      const w = await openWatch(g.ns, claim);
      await w.next();
      watchers.push(w);
    }
    // Armed no later than the lease's deadline (the listing's delivery check may come first).
    expect(await runInDurableObject(g.stubOf(), (_i, state) => state.storage.getAlarm())).toBeLessThanOrEqual(
      noticeAtMs(lease.leaseExpiresAtMs, TTL),
    );
    // At the deadline the lease still holds: the alarm re-arms and ends nothing.
    await g.clock.advance(TTL);
    expect(await runDurableObjectAlarm(g.stubOf())).toBe(true);
    expect((await g.read()).body.generation.leaseExpiresAtMs).toBe(lease.leaseExpiresAtMs);
    await g.clock.advance(1);
    expect(await runDurableObjectAlarm(g.stubOf())).toBe(true);
    for (const w of watchers) {
      expect(await w.next()).toMatchObject({
        type: "event",
        reason: "expired",
        claim: { phase: "unowned", previousOwner: g.id, bound: false },
      });
    }
    expect((await g.read()).body.generation).toMatchObject({ leaseExpiresAtMs: 0, leaseEpoch: "1" });
    // Every delivery was acknowledged: nothing is owed any more.
    const owed = await runInDurableObject(g.stubOf(), (_i, state) =>
      state.storage.sql.exec("SELECT COUNT(*) AS n FROM bound_claims").one(),
    );
    expect(owed.n).toBe(0);
  });

  it("lease/end arms the alarm a second ahead with its commit: a restart before the deliveries resumes them", async () => {
    const g = await setup();
    await g.keepalive();
    const claim = unique();
    expect((await post(claimUrl(g.ns, claim, "/acquire"), { generationId: g.id, bound: true })).status).toBe(200);
    expect((await post(`${g.url}/lease/end`, {})).status).toBe(200);
    const armedAt = await runInDurableObject(g.stubOf(), (_i, state) => state.storage.getAlarm());
    expect(armedAt).toBeLessThanOrEqual(g.clock.nowMs() + DELIVERY_CHECK_MS);
  });

  it("keepalives of the ttl the row already promises write no row; a longer ttl writes one", async () => {
    const g = await setup();
    const first = await metered(g.stubOf(), (o) => o.keepalive(g.id, { ttlMs: TTL }));
    expect(first.result.status).toBe(200);
    expect(first.cost.rowsWritten).toBeGreaterThan(0);
    let rowsWritten = 0;
    const keepalives = 30;
    for (let i = 0; i < keepalives; i++) {
      await g.clock.advance(TTL / 3);
      const { result, cost } = await metered(g.stubOf(), (o) => o.keepalive(g.id, { ttlMs: TTL }));
      expect(result.body).toMatchObject({ generation: { leaseExpiresAtMs: g.clock.nowMs() + TTL } });
      rowsWritten += cost.rowsWritten;
      expect(cost.writesOutsideTransaction).toBe(0);
    }
    expect(rowsWritten).toBe(0);
    const longer = await metered(g.stubOf(), (o) => o.keepalive(g.id, { ttlMs: 2 * TTL }));
    expect(longer.cost.rowsWritten).toBeGreaterThan(0);
  });

  it("after a restart the lease lives to the first read + ttl: never ended before a deadline it answered, extended once", async () => {
    const g = await setup();
    await g.keepalive();
    // Keepalives that wrote nothing answered later deadlines than the row holds.
    await g.clock.advance(TTL / 3);
    const answeredAtMs = g.clock.nowMs();
    const answered = (await g.keepalive()).body.generation.leaseExpiresAtMs as number;
    await restartObject(g.stubOf());
    await g.installClock();
    // The restarted object's first read comes just past the answered deadline: it still holds the lease...
    await g.clock.advance(answered + 1 - g.clock.nowMs());
    const firstReadMs = g.clock.nowMs();
    const after = (await g.read()).body.generation;
    expect(after.leaseExpiresAtMs).toBeGreaterThanOrEqual(answered);
    expect(after.leaseExpiresAtMs - answered).toBeLessThanOrEqual(firstReadMs - answeredAtMs);
    // ...wrote that deadline, so another restart does not extend it again...
    await restartObject(g.stubOf());
    await g.installClock();
    await g.clock.advance(TTL / 2);
    expect((await g.read()).body.generation.leaseExpiresAtMs).toBe(after.leaseExpiresAtMs);
    // ...and ends it once that passed.
    await g.clock.advance(after.leaseExpiresAtMs + 1 - g.clock.nowMs());
    expect((await g.read()).body.generation.leaseExpiresAtMs).toBe(0);
  });

  it("the lease channel: the record first, pings answered by the runtime keep the lease, the end closes it", async () => {
    // The runtime stamps the ping with its own clock, 10 s ahead of the object's manual one:
    // the ping's deadline is then unmistakably later than the one the opening promised.
    const g = await setup(10_000);
    const channel = await openWatchSocket(`${g.url}/lease?ttlMs=${TTL}`, WRITE);
    const opening = await channel.next();
    expect(opening).toMatchObject({ type: "generation", generation: { id: g.id, leaseEpoch: "1" } });
    const openedDeadline = opening.generation.leaseExpiresAtMs as number;
    channel.ws.send('{"type":"ping"}');
    expect(await channel.next()).toEqual({ type: "pong" });
    // The opening's listing check (1 s on the manual clock, already past for the runtime's)
    // fires on its own and re-arms for the lease's deadline (moved by the ping already, if it
    // read it): wait for that re-arm.
    await untilAlarmFrom(g.stubOf(), openedDeadline + 1);
    // The alarm, at the deadline the opening promised, reads the last ping's time (the
    // runtime's clock) and keeps the lease instead of ending it.
    await g.clock.advance(openedDeadline + 1 - g.clock.nowMs());
    expect(await runDurableObjectAlarm(g.stubOf())).toBe(true);
    const kept = (await g.read()).body.generation;
    expect(kept.leaseEpoch).toBe("1");
    expect(kept.leaseExpiresAtMs).toBeGreaterThan(openedDeadline + 5_000);
    // ...and told the channel the deadline it now promises.
    await channel.until((m) => m.some((x) => x.type === "lease"));
    expect(channel.messages.find((x) => x.type === "lease")).toEqual({
      type: "lease",
      leaseEpoch: "1",
      leaseExpiresAtMs: kept.leaseExpiresAtMs,
    });
    // lease/end: the channel hears why, then is closed.
    expect((await post(`${g.url}/lease/end`, {})).body.generation.leaseExpiresAtMs).toBe(0);
    await channel.until((m) => m.some((x) => x.type === "ended"));
    expect(channel.messages.find((x) => x.type === "ended")).toEqual({
      type: "ended",
      leaseEpoch: "1",
      reason: "ended",
    });
    expect((await channel.closed).code).toBe(1000);
  });

  it("a closed channel ends nothing, and its last ping's deadline survives a restart exactly (no slack)", async () => {
    const g = await setup(10_000);
    const channel = await openWatchSocket(`${g.url}/lease?ttlMs=${TTL}`, WRITE);
    await channel.next();
    channel.ws.send('{"type":"ping"}');
    expect(await channel.next()).toEqual({ type: "pong" });
    const served = (await g.read()).body.generation as { leaseExpiresAtMs: number; leaseEpoch: string };
    channel.ws.close(1000, "done");
    // The object writes the channel's deadline when it hears the close: wait for that row.
    const stored = () =>
      runInDurableObject(
        g.stubOf(),
        (_i, state) => state.storage.sql.exec<{ d: number }>("SELECT lease_expires_at_ms AS d FROM generation").one().d,
      );
    for (let i = 0; i < 100 && (await stored()) !== served.leaseExpiresAtMs; i++) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(await stored()).toBe(served.leaseExpiresAtMs);
    await restartObject(g.stubOf());
    await g.installClock();
    expect((await g.read()).body.generation).toMatchObject({
      leaseEpoch: served.leaseEpoch,
      leaseExpiresAtMs: served.leaseExpiresAtMs,
    });
  });

  it("a channel closed after the object hibernated: the lease runs to its last ping + ttl, not to the wake-up + ttl", async () => {
    const g = await setup();
    const channel = await openWatchSocket(`${g.url}/lease?ttlMs=${TTL}`, WRITE);
    await channel.next();
    const sentMs = Date.now();
    channel.ws.send('{"type":"ping"}');
    expect(await channel.next()).toEqual({ type: "pong" });
    const receivedBy = Date.now();
    // The runtime keeps the socket and its last ping's time; the instance that served them is gone.
    await hibernate(g.stubOf());
    channel.ws.close(1000, "done");
    const stored = () =>
      runInDurableObject(
        g.stubOf(),
        (_i, state) => state.storage.sql.exec<{ d: number }>("SELECT lease_expires_at_ms AS d FROM generation").one().d,
      );
    const served = (await g.read()).body.generation as { leaseExpiresAtMs: number };
    for (let i = 0; i < 100 && (await stored()) < sentMs + TTL; i++) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    // The ping's deadline exactly (stamped when the runtime received it), not the wake-up + ttl of a restart.
    expect(await stored()).toBeGreaterThanOrEqual(sentMs + TTL);
    expect(await stored()).toBeLessThanOrEqual(receivedBy + TTL);
    expect(served.leaseExpiresAtMs).toBeLessThanOrEqual(receivedBy + TTL);
  });

  it("the channel of an unknown or retired generation is refused before upgrading", async () => {
    const g = await setup();
    const nobody = g.url.replace(encodeURIComponent(g.id), unique("nobody"));
    await expect(openWatchSocket(`${nobody}/lease?ttlMs=${TTL}`, WRITE)).rejects.toThrow(/404.*generation_not_found/);
    await g.keepalive();
    const retired = await routerCall("PATCH", g.url, { state: "retired" }, WRITE);
    expect(retired.body.generation).toMatchObject({ state: "retired", leaseExpiresAtMs: 0 });
    await expect(openWatchSocket(`${g.url}/lease?ttlMs=${TTL}`, WRITE)).rejects.toThrow(/409.*invalid_state/);
  });
});
