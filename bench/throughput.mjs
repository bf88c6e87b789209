/**
 * Closed-loop throughput phases: the no-op ceiling (`GET /healthz`), claims
 * acquire→release cycles and coord lease try→publish→release cycles, each with 1 client on
 * one object and with 32 clients on 32 objects.
 *
 * Guarantees: every cycle checks the status of every reply (a wrong status fails the phase
 * instead of inflating the rate); each phase runs a short warm-up first (the first request to
 * an object creates it); names are unique per run so no state from an earlier run is reused.
 */
import { expectStatus } from "./http.mjs";
import { closedLoop, summarize } from "./stats.mjs";

/**
 * What every phase gets from bench/run.mjs.
 * @typedef {object} PhaseContext
 * @property {string} url server base URL
 * @property {import("./http.mjs").BenchClient} client
 * @property {string} ns namespace unique to this run
 * @property {string} token bearer token (for the watch sockets; the client sends its own)
 * @property {number} durationMs measured duration
 * @property {number} maxCycles count bound
 */

/**
 * A throughput figure: the closed loop's result and how many requests one cycle sends.
 * `acquire`: the acquire request alone, where a cycle has one (claims), so its latency can be
 * read in round trips behind the WAN relay.
 * @typedef {import("./stats.mjs").LoopResult & { requestsPerCycle: number, acquire?: import("./stats.mjs").Summary }} Throughput
 */

const WARMUP = { durationMs: 1_500, maxCycles: 100 };
const TTL_MS = 15_000;

/**
 * @param {PhaseContext} ctx
 * @param {number} clients
 * @param {(client: number, i: number) => Promise<void>} cycle
 * @param {() => void} [afterWarmup] called between the warm-up and the measured loop
 */
async function measure(ctx, clients, cycle, afterWarmup = () => {}) {
  await closedLoop({ clients, ...WARMUP, cycle });
  afterWarmup();
  return closedLoop({ clients, durationMs: ctx.durationMs, maxCycles: ctx.maxCycles, cycle });
}

/** @param {string} s */
const enc = (s) => encodeURIComponent(s);

/**
 * `GET /healthz`: the dev proxy + router with no Durable Object — the ceiling.
 * @param {PhaseContext} ctx
 * @param {number} clients concurrent loops
 * @returns {Promise<Throughput>}
 */
export async function healthz(ctx, clients) {
  const r = await measure(ctx, clients, async () => {
    expectStatus(await ctx.client.call("GET", `${ctx.url}/healthz`), 200, "healthz");
  });
  return { ...r, requestsPerCycle: 1 };
}

/**
 * Claims: acquire (unowned → owned, token+1) then release, by one generation per client,
 * each client on its own claim.
 * @param {PhaseContext} ctx
 * @param {number} clients concurrent loops
 * @returns {Promise<Throughput>}
 */
export async function claimCycles(ctx, clients) {
  const tag = clients === 1 ? "one" : "many";
  /** @param {number} client */
  const cycle = async (client) => {
    const base = `${ctx.url}/v1/ns/${enc(ctx.ns)}/claims/${enc(`bench-${tag}-${client}`)}`;
    const generationId = `gen-${client}`;
    const start = performance.now();
    const reply = await ctx.client.call("POST", `${base}/acquire`, { generationId, ttlMs: TTL_MS });
    acquireMs.push(performance.now() - start);
    const acquired = expectStatus(reply, 200, "acquire");
    const token = acquired.claim.fencingToken;
    expectStatus(await ctx.client.call("POST", `${base}/release`, { generationId, token }), 200, "release");
  };
  /** @type {number[]} */
  const acquireMs = [];
  const r = await measure(ctx, clients, cycle, () => acquireMs.splice(0));
  return { ...r, requestsPerCycle: 2, acquire: summarize(acquireMs) };
}

/**
 * Coord: take the write lease without waiting, publish a new root (generation+1, durable),
 * release it; each client on its own object-store scope.
 * @param {PhaseContext} ctx
 * @param {number} clients concurrent loops
 * @returns {Promise<Throughput>}
 */
export async function coordCycles(ctx, clients) {
  const tag = clients === 1 ? "one" : "many";
  /**
   * @param {number} client
   * @param {number} i
   */
  const cycle = async (client, i) => {
    const scope = `${ctx.url}/v1/ns/${enc(ctx.ns)}/volumes/${enc(`bench-${tag}`)}/stores/${enc(`store-${client}`)}`;
    const granted = expectStatus(
      await ctx.client.call("POST", `${scope}/leases`, { participantId: `p-${client}`, ttlMs: TTL_MS }),
      201,
      "lease",
    );
    const leases = `${scope}/leases/${enc(granted.lease.leaseId)}`;
    expectStatus(await ctx.client.call("POST", `${leases}/publish`, { root: { cycle: i } }), 200, "publish");
    expectStatus(await ctx.client.call("DELETE", leases), 204, "release");
  };
  return { ...(await measure(ctx, clients, cycle)), requestsPerCycle: 3 };
}

/**
 * Claims read: `GET` of one existing claim. Same router, auth and RPC hop as a mutation but
 * no storage write and no alarm, which separates the cost of the hop from the cost of a
 * durable change when the cycle figures are analysed.
 * @param {PhaseContext} ctx
 * @param {number} clients concurrent loops
 * @returns {Promise<Throughput>}
 */
export async function claimReads(ctx, clients) {
  const base = `${ctx.url}/v1/ns/${enc(ctx.ns)}/claims/bench-read`;
  expectStatus(
    await ctx.client.call("POST", `${base}/acquire`, { generationId: "gen-r", ttlMs: 60_000 }),
    200,
    "acquire",
  );
  const r = await measure(ctx, clients, async () => {
    expectStatus(await ctx.client.call("GET", base), 200, "read");
  });
  return { ...r, requestsPerCycle: 1 };
}

/**
 * Claims write-path decomposition, one client on one held claim:
 * - `replay`: the same `acquire` with the same `operationId` again — the full mutation route
 *   (auth, validation, RPC, an SQL read of the operation record) but no write, no alarm;
 * - `renew`: one durable change (one storage transaction) plus re-arming the alarm.
 * Their difference is the cost of a durable write on this machine.
 * @param {PhaseContext} ctx
 * @param {"replay" | "renew"} kind
 * @returns {Promise<Throughput>}
 */
export async function claimWriteCost(ctx, kind) {
  const base = `${ctx.url}/v1/ns/${enc(ctx.ns)}/claims/bench-${kind}`;
  const acquire = { generationId: "gen-w", ttlMs: 60_000, operationId: "bench-op-1" };
  const held = expectStatus(await ctx.client.call("POST", `${base}/acquire`, acquire), 200, "acquire");
  const token = held.claim.fencingToken;
  const cycle =
    kind === "replay"
      ? async () => {
          expectStatus(await ctx.client.call("POST", `${base}/acquire`, acquire), 200, "replayed acquire");
        }
      : async () => {
          const body = { generationId: "gen-w", token, ttlMs: 60_000 };
          expectStatus(await ctx.client.call("POST", `${base}/renew`, body), 200, "renew");
        };
  return { ...(await measure(ctx, 1, cycle)), requestsPerCycle: 1 };
}
