/* eslint-disable @typescript-eslint/no-explicit-any, @typescript-eslint/no-unsafe-argument, @typescript-eslint/no-unsafe-return -- watch messages are inspected loosely. */
// Watch over hibernatable WebSockets: snapshot, replay by afterVersion, truncated snapshot,
// live order without gaps or duplicates, ping/pong, lag (4008), the watcher cap and auth.
import { runInDurableObject } from "cloudflare:test";
import { exports } from "cloudflare:workers";
import { afterEach, describe, expect, it } from "vitest";
import { RETAINED_EVENTS } from "../../src/protocol/watch.ts";
import { PRUNE_BATCH_EVENTS } from "../../src/durable/history-pruning.ts";
import { WATCH_MAX_UNACKED_EVENTS } from "../../src/protocol/watch.ts";
import {
  READ,
  churn,
  claimStub,
  claimUrl,
  clearAlarm,
  get,
  openWatch,
  post,
  unique,
  type Watch,
  clearTrackedAlarms,
  track,
} from "./claims-helpers.ts";

const TTL = 60_000;

function fresh() {
  const ns = unique("ns");
  const claim = unique();
  track(ns, claim);
  return {
    ns,
    claim,
    stub: claimStub(ns, claim),
    post: (suffix: string, body: unknown) => post(claimUrl(ns, claim, suffix), body),
    watch: (query = "") => openWatch(ns, claim, query),
  };
}

const events = (w: Watch) => w.messages.filter((m) => m.type === "event");
const versions = (list: any[]) => list.map((m) => BigInt(m.claim.version));

describe("claim watch", { timeout: 60_000 }, () => {
  afterEach(clearTrackedAlarms);

  it("starts with a null snapshot for a claim never acquired, and creates nothing", async () => {
    const c = fresh();
    const w = await c.watch();
    expect(await w.next()).toEqual({ type: "snapshot", claim: null });
    expect((await get(claimUrl(c.ns, c.claim))).status).toBe(404);
    w.ws.close(1000);
  });

  it("snapshot then live events in version order; renewals are not events", async () => {
    const c = fresh();
    const acquired = (await c.post("/acquire", { generationId: "old", ttlMs: TTL })).body.claim;
    const w = await c.watch();
    expect(await w.next()).toEqual({ type: "snapshot", claim: acquired });
    await c.post("/renew", { generationId: "old", token: "1", ttlMs: TTL });
    await c.post("/transfer/prepare", { fromGeneration: "old", toGeneration: "new", token: "1", ttlMs: TTL });
    await c.post("/transfer/abort", { fromGeneration: "old", toGeneration: "new", expectedToken: "1" });
    await c.post("/transfer/prepare", { fromGeneration: "old", toGeneration: "new", token: "1", ttlMs: TTL });
    const committed = await c.post("/transfer/commit", {
      fromGeneration: "old",
      toGeneration: "new",
      expectedToken: "1",
      ttlMs: TTL,
    });
    const released = await c.post("/release", { generationId: "new", token: "2" });
    await w.until((m) => m.length === 6);
    const got = w.messages.slice(1);
    expect(got.map((m) => m.reason)).toEqual([
      "transfer_prepared",
      "transfer_aborted",
      "transfer_prepared",
      "transfer_committed",
      "released",
    ]);
    expect(versions(got)).toEqual([3n, 4n, 5n, 6n, 7n]);
    for (const m of got) expect(typeof m.timeMs).toBe("number");
    expect(got[3].claim).toEqual(committed.body.claim);
    expect(got[4].claim).toEqual(released.body.claim);
    expect(got[3].timeMs).toBe(committed.body.claim.acquiredAtMs);
    w.ws.close(1000);
    await clearAlarm(c.stub);
  });

  it("afterVersion replays retained events after N, in order, then continues live", async () => {
    const c = fresh();
    await churn(c.stub, c.claim, 3); // versions 1..6, all events
    const w = await c.watch("?afterVersion=2");
    await w.until((m) => m.length === 4);
    expect(w.messages.every((m) => m.type === "event")).toBe(true);
    expect(versions(w.messages)).toEqual([3n, 4n, 5n, 6n]);
    expect(w.messages.map((m) => m.reason)).toEqual(["acquired", "released", "acquired", "released"]);
    await c.post("/acquire", { generationId: "g", ttlMs: TTL });
    await w.until((m) => m.length === 5);
    expect(w.messages[4]).toMatchObject({
      type: "event",
      reason: "acquired",
      claim: { version: "7", fencingToken: "4" },
    });
    w.ws.close(1000);
    await clearAlarm(c.stub);
  });

  it("afterVersion at the current version sends nothing until the next event", async () => {
    const c = fresh();
    const v = await churn(c.stub, c.claim, 1);
    const w = await c.watch(`?afterVersion=${v}`);
    await c.post("/acquire", { generationId: "g", ttlMs: TTL });
    const first = await w.next();
    expect(first).toMatchObject({ type: "event", reason: "acquired", claim: { version: String(v + 1n) } });
    w.ws.close(1000);
    await clearAlarm(c.stub);
  });

  it("sends a truncated snapshot when history no longer reaches afterVersion", async () => {
    const c = fresh();
    // 324 events; the 320th pruned the oldest 64 (pruning runs in batches: claims/store.ts),
    // so 260 are retained: versions 65..324.
    const cycles = (RETAINED_EVENTS + PRUNE_BATCH_EVENTS) / 2 + 2;
    const last = await churn(c.stub, c.claim, cycles);
    const retained = RETAINED_EVENTS + 4;
    const oldest = last - BigInt(retained) + 1n;

    const truncated = await c.watch(`?afterVersion=${oldest - 2n}`);
    const snap = await truncated.next();
    expect(snap).toMatchObject({ type: "snapshot", truncated: true, claim: { version: String(last) } });

    const full = await c.watch(`?afterVersion=${oldest - 1n}`);
    await full.until((m) => m.length === retained);
    expect(versions(full.messages)[0]).toBe(oldest);
    expect(versions(full.messages).at(-1)).toBe(last);

    // A version the claim never reached cannot be resumed from either.
    const future = await c.watch(`?afterVersion=${last + 10n}`);
    expect(await future.next()).toMatchObject({ type: "snapshot", truncated: true });
    for (const w of [truncated, full, future]) w.ws.close(1000);
  });

  it("delivers every event exactly once, in order, to watchers joining mid-stream", async () => {
    const c = fresh();
    const early = await c.watch("?afterVersion=0");
    const ops: Promise<unknown>[] = [];
    const joiners: Promise<Watch>[] = [];
    for (let i = 0; i < 40; i++) {
      const gen = `g${i % 4}`;
      ops.push(
        (async () => {
          const a = await c.post("/acquire", { generationId: gen, ttlMs: TTL });
          if (a.status === 200) await c.post("/release", { generationId: gen, token: a.body.claim.fencingToken });
        })(),
      );
      if (i % 10 === 5) joiners.push(c.watch(i % 20 === 5 ? "" : "?afterVersion=0"));
    }
    await Promise.all(ops);
    const watchers = await Promise.all(joiners);
    const final = (await get(claimUrl(c.ns, c.claim))).body.claim;
    // The canonical history, replayed from storage by a watcher that joins afterwards.
    const canonical = await c.watch("?afterVersion=0");
    await canonical.until((m) => m.length > 0 && m.at(-1).claim.version === final.version);
    const all = versions(canonical.messages);
    expect(all).toEqual([...all].sort((a, b) => (a < b ? -1 : 1)));
    expect(new Set(all).size).toBe(all.length);

    for (const w of [early, ...watchers]) {
      await w.until((m) => m.length > 0 && m.at(-1).claim.version === final.version);
      const first = w.messages[0];
      const start = first.type === "snapshot" ? BigInt(first.claim?.version ?? "0") : 0n;
      const expected = canonical.messages.filter((m) => BigInt(m.claim.version) > start);
      expect(events(w)).toEqual(expected);
      w.ws.close(1000);
    }
    canonical.ws.close(1000);
  });

  it("answers ping with pong (exact text by the runtime, other spellings by the object)", async () => {
    const c = fresh();
    const w = await c.watch();
    await w.next();
    w.ws.send('{"type":"ping"}');
    expect(await w.next()).toEqual({ type: "pong" });
    w.ws.send('{ "type": "ping" }');
    expect(await w.next()).toEqual({ type: "pong" });
    w.ws.send("not json");
    w.ws.send('{"type":"ping"}');
    expect(await w.next()).toEqual({ type: "pong" });
    w.ws.close(1000);
  });

  it(`closes a subscriber with more than ${WATCH_MAX_UNACKED_EVENTS} unacknowledged events with 4008; it resumes without loss`, async () => {
    const c = fresh();
    const w = await c.watch();
    await w.next(); // snapshot (null)
    const cycles = WATCH_MAX_UNACKED_EVENTS / 2 + 1;
    const last = await churn(c.stub, c.claim, cycles);
    const closed = await w.closed;
    expect(closed.code).toBe(4008);
    const got = events(w);
    expect(got.length).toBe(WATCH_MAX_UNACKED_EVENTS);
    expect(versions(got)).toEqual(Array.from({ length: got.length }, (_, i) => BigInt(i + 1)));
    // Resuming from the last event received loses nothing.
    const resumed = await c.watch(`?afterVersion=${versions(got).at(-1)}`);
    await resumed.until((m) => m.length === Number(last) - got.length);
    expect(versions(resumed.messages)[0]).toBe(BigInt(got.length + 1));
    expect(versions(resumed.messages).at(-1)).toBe(last);
    resumed.ws.close(1000);
  });

  it("a subscriber that acknowledges is never closed", async () => {
    const c = fresh();
    const w = await c.watch();
    await w.next();
    const half = WATCH_MAX_UNACKED_EVENTS / 4 + 100; // 712 events per round, 1424 in all
    const firstRound = await churn(c.stub, c.claim, half);
    await w.until((m) => m.length === 1 + 2 * half);
    w.ws.send(JSON.stringify({ type: "ack", version: String(firstRound) }));
    // A non-exact ping is answered by the object after it handled the ack before it.
    w.ws.send('{"type": "ping"}');
    await w.until((m) => m.at(-1).type === "pong");
    const secondRound = await churn(c.stub, c.claim, half);
    await w.until((m) => m.length === 2 + 4 * half);
    expect(versions(events(w)).at(-1)).toBe(secondRound);
    expect(w.ws.readyState).toBe(WebSocket.OPEN);
    w.ws.close(1000);
  });

  it("refuses watchers over the per-object cap with 429 rate_limited and Retry-After", async () => {
    const c = fresh();
    await runInDurableObject(c.stub, (instance) => {
      instance.hooks.maxWatchers = 1;
    });
    const first = await c.watch();
    await first.next();
    const res = await exports.default.fetch(claimUrl(c.ns, c.claim, "/watch"), {
      headers: { Upgrade: "websocket", Authorization: `Bearer ${READ}` },
    });
    expect(res.status).toBe(429);
    expect(res.headers.get("Retry-After")).toBe("1");
    expect(await res.json()).toMatchObject({ error: { code: "rate_limited" } });
    first.ws.close(1000);
  });

  it("authenticates with the bearer subprotocol and echoes it", async () => {
    const c = fresh();
    const protocol = "shiftlock.bearer.test-read-all";
    const res = await exports.default.fetch(claimUrl(c.ns, c.claim, "/watch"), {
      headers: { Upgrade: "websocket", "Sec-WebSocket-Protocol": protocol },
    });
    expect(res.status).toBe(101);
    expect(res.headers.get("Sec-WebSocket-Protocol")).toBe(protocol);
    res.webSocket!.accept();
    res.webSocket!.close(1000);
  });

  it("refuses a watch without a token (401) or for another namespace (403)", async () => {
    const headers = { Upgrade: "websocket" };
    const none = await exports.default.fetch(claimUrl("alpha", unique(), "/watch"), { headers });
    expect(none.status).toBe(401);
    const wrongNs = await exports.default.fetch(claimUrl("beta", unique(), "/watch"), {
      headers: { ...headers, Authorization: "Bearer test-write-alpha" },
    });
    expect(wrongNs.status).toBe(403);
    expect(await wrongNs.json()).toMatchObject({ error: { code: "forbidden" } });
  });
});
