/**
 * Expiry latency: how long after a lease's deadline a watcher hears that it expired, with
 * nobody touching the object (only the alarm can end it).
 * - claims: acquire with `ttlMs: 200`, then wait on a claims watch for the `expired` event;
 * - coord: take the write lease with `ttlMs: 200`, then wait on a scope watch for the
 *   `unlocked` event with `expired: true`.
 *
 * A sample is the client's `Date.now()` when it parsed the event minus the `expiresAtMs` the
 * server returned (both clocks are this machine's). Guarantees: one round at a time, each
 * bounded (5 s per event, the whole phase by 3× the duration or 20 s); a round whose event never
 * comes is counted as missing, not dropped. Does not separate the alarm's delay from the
 * delivery (the event is sent from inside the alarm handler).
 */
import { expectStatus } from "./http.mjs";
import { summarize } from "./stats.mjs";
import { closeAll, openWatchers } from "./watchers.mjs";

const TTL_MS = 200;
const EVENT_TIMEOUT_MS = 5_000;

/** @param {string} s */
const enc = (s) => encodeURIComponent(s);

/**
 * Resolve with the client wall-clock time of the next event `accept` takes, or undefined
 * after `timeoutMs`.
 * @param {import("./watchers.mjs").Watcher} watcher
 * @param {(msg: import("./watchers.mjs").WatchMessage) => boolean} accept
 * @returns {Promise<number | undefined>}
 */
function nextEventAt(watcher, accept) {
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      watcher.onEvent = undefined;
      resolve(undefined);
    }, EVENT_TIMEOUT_MS);
    watcher.onEvent = (msg, _at, wallMs) => {
      if (!accept(msg)) return;
      clearTimeout(timer);
      watcher.onEvent = undefined;
      resolve(wallMs);
    };
  });
}

/**
 * @typedef {{ latency: import("./stats.mjs").Summary, missing: number, ttlMs: number }} Expiry
 */

/**
 * @param {import("./throughput.mjs").PhaseContext} ctx
 * @param {"claims" | "coord"} kind
 * @param {number} rounds
 * @returns {Promise<Expiry>}
 */
export async function expiry(ctx, kind, rounds) {
  const path =
    kind === "claims"
      ? `/v1/ns/${enc(ctx.ns)}/claims/bench-expiry`
      : `/v1/ns/${enc(ctx.ns)}/volumes/bench-expiry/stores/main`;
  const wsUrl = `${ctx.url.replace(/^http/, "ws")}${path}/watch`;
  const { watchers } = await openWatchers(wsUrl, ctx.token, 1, 1, kind);
  const [watcher] = watchers;
  if (watcher === undefined) throw new Error("no watcher opened");
  /** @type {number[]} */
  const samples = [];
  let missing = 0;
  const deadline = performance.now() + Math.max(ctx.durationMs * 3, 20_000);
  try {
    for (let i = 0; i < rounds && performance.now() < deadline; i++) {
      /** @type {Promise<number | undefined>} */
      let seen;
      /** @type {number} */
      let expiresAtMs;
      if (kind === "claims") {
        seen = nextEventAt(watcher, (m) => m.reason === "expired");
        const body = { generationId: "gen-expiry", ttlMs: TTL_MS };
        const reply = await ctx.client.call("POST", `${ctx.url}${path}/acquire`, body);
        expiresAtMs = expectStatus(reply, 200, "acquire").claim.expiresAtMs;
      } else {
        seen = nextEventAt(watcher, (m) => m.unlocked === true && m.expired === true);
        const body = { participantId: "p-expiry", ttlMs: TTL_MS };
        const reply = await ctx.client.call("POST", `${ctx.url}${path}/leases`, body);
        expiresAtMs = expectStatus(reply, 201, "lease").lease.expiresAtMs;
      }
      const at = await seen;
      if (at === undefined) missing++;
      else samples.push(at - expiresAtMs);
    }
  } finally {
    closeAll(watchers);
  }
  return { latency: summarize(samples), missing, ttlMs: TTL_MS };
}
