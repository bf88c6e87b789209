/**
 * Coord latency phases:
 * - hand-over: how long from the holder's release (`DELETE …/leases/{id}` sent) until the
 *   next waiter, queued with `waitMs`, receives its 201 grant;
 * - fan-out: how long from a publish being sent until each of 1, 100 or 1,000 watchers of
 *   the scope receives the matching event.
 *
 * Guarantees: hand-over releases only once the server has reported the waiter queued (its
 * `wantLock` event on a watch of the scope), so every sample is a real queued hand-over,
 * never a race with an idle scope. Fan-out waits for every watcher to receive publish k
 * before sending k+1, matches events by generation, and counts missing deliveries instead of
 * hiding them. All times are the client's `performance.now()`: they include the client's own
 * event-loop delay, which grows with the number of sockets it parses.
 */
import { expectStatus } from "./http.mjs";
import { round, summarize } from "./stats.mjs";
import { closeAll, openWatchers } from "./watchers.mjs";

const TTL_MS = 15_000;
/** How long a publish waits for every watcher before the missing ones are counted. */
export const FANOUT_DELIVERY_TIMEOUT_MS = 10_000;

/** @param {string} s */
const enc = (s) => encodeURIComponent(s);

/**
 * @param {import("./throughput.mjs").PhaseContext} ctx
 * @param {string} volume
 */
function scopeUrls(ctx, volume) {
  const path = `/v1/ns/${enc(ctx.ns)}/volumes/${enc(volume)}/stores/main`;
  return { http: `${ctx.url}${path}`, ws: `${ctx.url.replace(/^http/, "ws")}${path}/watch` };
}

/** @typedef {import("./watchers.mjs").WatchMessage} WatchMessage */

/**
 * Resolve with the next event `accept` takes, or reject after `timeoutMs`.
 * @param {import("./watchers.mjs").Watcher} watcher
 * @param {(msg: WatchMessage) => boolean} accept
 * @param {number} timeoutMs
 * @returns {Promise<WatchMessage>}
 */
function nextEvent(watcher, accept, timeoutMs) {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      watcher.onEvent = undefined;
      reject(new Error(`no matching event within ${timeoutMs} ms`));
    }, timeoutMs);
    watcher.onEvent = (msg) => {
      if (!accept(msg)) return;
      clearTimeout(timer);
      watcher.onEvent = undefined;
      resolve(msg);
    };
  });
}

/**
 * Alternate two participants: one holds, the other queues with waitMs, the holder releases.
 * @param {import("./throughput.mjs").PhaseContext} ctx
 * @param {number} rounds maximum hand-overs
 * @returns {Promise<{ latency: import("./stats.mjs").Summary }>}
 */
export async function handover(ctx, rounds) {
  const scope = scopeUrls(ctx, "bench-handover");
  const { watchers } = await openWatchers(scope.ws, ctx.token, 1);
  const [watcher] = watchers;
  if (watcher === undefined) throw new Error("no watcher opened");
  /** @type {number[]} */
  const samples = [];
  /**
   * @param {string} participantId
   * @param {number} waitMs
   */
  const acquire = (participantId, waitMs) =>
    ctx.client.call("POST", `${scope.http}/leases`, { participantId, ttlMs: TTL_MS, waitMs });
  let holder = expectStatus(await acquire("p-0", 0), 201, "first lease").lease;
  const deadline = performance.now() + ctx.durationMs * 3;
  try {
    for (let i = 1; i <= rounds && performance.now() < deadline; i++) {
      const queued = nextEvent(watcher, (m) => m.wantLock === true, 10_000);
      const waiter = acquire(`p-${i % 2}`, 10_000);
      await queued;
      const t0 = performance.now();
      const released = ctx.client.call("DELETE", `${scope.http}/leases/${enc(holder.leaseId)}`);
      const granted = await waiter;
      const t1 = performance.now();
      expectStatus(await released, 204, "release");
      holder = expectStatus(granted, 201, "queued lease").lease;
      samples.push(t1 - t0);
    }
  } finally {
    await ctx.client.call("DELETE", `${scope.http}/leases/${enc(holder.leaseId)}`);
    closeAll(watchers);
  }
  return { latency: summarize(samples) };
}

/**
 * A fan-out figure: delivery from publish sent to each watcher, and to the last of them.
 * @typedef {object} Fanout
 * @property {number} watchers
 * @property {number} publishes
 * @property {number} connectAllMs time to open every socket and see `ready`
 * @property {import("./stats.mjs").Summary} publishReply
 * @property {import("./stats.mjs").Summary} delivery
 * @property {import("./stats.mjs").Summary} lastWatcher
 * @property {number} missing deliveries that did not arrive within {@link FANOUT_DELIVERY_TIMEOUT_MS}
 */

/**
 * A scope watched by `n` sockets, a lease held on it, and one publish at a time.
 * @typedef {object} FanoutSession
 * @property {number} readyMs time to open every socket and see `ready`
 * @property {() => Promise<{ replyMs: number, arrivals: number[], t0: number }>} publish
 *   publish once and wait (at most {@link FANOUT_DELIVERY_TIMEOUT_MS}) until every watcher has parsed the matching event;
 *   `arrivals` are the `performance.now()` stamps of those that did
 * @property {() => Promise<void>} close releases the lease and closes the sockets
 */

/**
 * Open `n` watchers on a scope and take its lease (shared by the fan-out phase and
 * `npm run bench:profile -- --workload=fanout`).
 * @param {import("./throughput.mjs").PhaseContext} ctx
 * @param {number} n watchers
 * @param {number} [ttlMs] the lease's ttl: longer than the session lasts (it is not kept alive)
 * @returns {Promise<FanoutSession>}
 */
export async function openFanout(ctx, n, ttlMs = TTL_MS) {
  const scope = scopeUrls(ctx, `bench-fanout-${n}`);
  const { watchers, readyMs } = await openWatchers(scope.ws, ctx.token, n);
  /** @type {string} */
  let leaseUrl;
  /** @type {bigint} */
  let generation;
  try {
    const lease = expectStatus(
      await ctx.client.call("POST", `${scope.http}/leases`, { participantId: "publisher", ttlMs }),
      201,
      "lease",
    ).lease;
    leaseUrl = `${scope.http}/leases/${enc(lease.leaseId)}`;
    generation = BigInt(
      expectStatus(await ctx.client.call("GET", `${scope.http}/snapshot`), 200, "snapshot").generation,
    );
  } catch (err) {
    closeAll(watchers);
    throw err;
  }
  const url = leaseUrl;
  let k = 0;
  return {
    readyMs,
    async publish() {
      const expected = String(generation + 1n);
      /** @type {number[]} */
      const arrivals = [];
      const all = new Promise((resolve) => {
        /** @type {Set<import("./watchers.mjs").Watcher>} */
        const seen = new Set();
        for (const w of watchers) {
          w.onEvent = (msg, at) => {
            if (String(msg.generation) !== expected || seen.has(w)) return;
            seen.add(w);
            arrivals.push(at);
            if (arrivals.length === watchers.length) resolve(undefined);
          };
        }
      });
      const t0 = performance.now();
      const reply = await ctx.client.call("POST", `${url}/publish`, { root: { k: k++ } });
      const replyMs = performance.now() - t0;
      generation = BigInt(expectStatus(reply, 200, "publish").generation);
      let timer;
      await Promise.race([all, new Promise((r) => (timer = setTimeout(r, FANOUT_DELIVERY_TIMEOUT_MS)))]);
      clearTimeout(timer);
      return { replyMs, arrivals, t0 };
    },
    async close() {
      try {
        await ctx.client.call("DELETE", url);
      } finally {
        closeAll(watchers);
      }
    },
  };
}

/**
 * Publish `publishes` times to a scope watched by `n` sockets.
 * @param {import("./throughput.mjs").PhaseContext} ctx
 * @param {number} n watchers
 * @param {number} publishes
 * @returns {Promise<Fanout>}
 */
export async function fanout(ctx, n, publishes) {
  const session = await openFanout(ctx, n);
  /** @type {number[]} */
  const deliveries = [];
  /** @type {number[]} */
  const lastDelivery = [];
  /** @type {number[]} */
  const publishReply = [];
  let missing = 0;
  try {
    for (let k = 0; k < publishes; k++) {
      const { replyMs, arrivals, t0 } = await session.publish();
      publishReply.push(replyMs);
      missing += n - arrivals.length;
      for (const at of arrivals) deliveries.push(at - t0);
      if (arrivals.length > 0) lastDelivery.push(Math.max(...arrivals) - t0);
    }
  } finally {
    await session.close();
  }
  return {
    watchers: n,
    publishes,
    connectAllMs: round(session.readyMs, 0),
    publishReply: summarize(publishReply),
    delivery: summarize(deliveries),
    lastWatcher: summarize(lastDelivery),
    missing,
  };
}
