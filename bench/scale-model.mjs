/**
 * The arithmetic of the scale model (`npm run bench:scale`, docs/scale.md): per-object
 * counts by phase from the server's meter lines, and their projection to larger namespaces
 * with Cloudflare's list prices.
 *
 * Guarantees: pure functions of their inputs (no clock, no I/O), so the projection is checked
 * by unit tests. Counts are summed exactly from the lines; nothing is sampled.
 * Does not: measure anything (bench/scale.mjs does) or know Cloudflare's limits beyond the
 * figures passed in.
 */

/** Workers Paid list prices as published in 2025 (check them when deploying). */
export const PRICES = {
  workerRequestsPerM: 0.3,
  workerCpuPerMCpuMs: 0.02,
  objectRequestsPerM: 0.15,
  durationPerMGbS: 12.5,
  rowsReadPerM: 0.001,
  rowsWrittenPerM: 1.0,
  storagePerGbMonth: 0.2,
};
/** Memory billed per active object (GB). */
export const OBJECT_GB = 0.128;
export const SECONDS_PER_MONTH = 30 * 24 * 3600;

/**
 * @typedef {{ obj: string, op: string, startMs: number, durMs: number, rowsRead: number,
 *   rowsWritten: number, frames: number, deliveries: number, alarmsSet?: number }} MeterLine
 * @typedef {{ name: string, startMs: number, endMs: number }} Phase
 * @typedef {{ requests: number, alarms: number, rowsRead: number, rowsWritten: number,
 *   frames: number, deliveries: number, alarmsSet: number, busyMs: number,
 *   intervals: [number, number][] }} ObjectCounts
 */

/** The kind of an object from its name (`["ns", kind, …]`). */
export function kindOf(/** @type {string} */ obj) {
  try {
    const parsed = /** @type {unknown} */ (JSON.parse(obj));
    return Array.isArray(parsed) && typeof parsed[1] === "string" ? parsed[1] : "unknown";
  } catch {
    return "unknown";
  }
}

/** Parse one printed line; undefined unless it is a meter line. */
export function parseMeterLine(/** @type {string} */ line) {
  const start = line.indexOf('{"meter":1');
  if (start < 0) return undefined;
  try {
    const parsed = /** @type {unknown} */ (JSON.parse(line.slice(start)));
    return /** @type {MeterLine} */ (parsed);
  } catch {
    return undefined;
  }
}

/** Total length of the union of intervals (ms). */
export function unionMs(/** @type {[number, number][]} */ intervals) {
  const sorted = [...intervals].sort((a, b) => a[0] - b[0]);
  let total = 0;
  let end = -Infinity;
  for (const [s, e] of sorted) {
    if (e <= end) continue;
    total += e - Math.max(s, end);
    end = e;
  }
  return total;
}

/** What a meter line counts, summed as they are (alarmsSet is absent from older lines). */
const TALLIES = /** @type {const} */ (["rowsRead", "rowsWritten", "frames", "deliveries", "alarmsSet"]);

function zeroTallies() {
  return { rowsRead: 0, rowsWritten: 0, frames: 0, deliveries: 0, alarmsSet: 0 };
}

/**
 * Counts per object for each phase (a line belongs to the phase its call started in). A
 * `delivery` line is the object's own call to a listing shard, started by a request or an
 * alarm already counted (the alarm flushes the outbox, a delivery line even when nothing is
 * owed): it is not a request to this object (the shard's `apply` is the billed one), so it
 * counts only its rows, deliveries and busy time.
 * @param {MeterLine[]} lines
 * @param {Phase[]} phases
 * @returns {Map<string, Map<string, ObjectCounts>>} phase → object → counts
 */
export function countByPhase(lines, phases) {
  /** @type {Map<string, Map<string, ObjectCounts>>} */
  const out = new Map(phases.map((p) => [p.name, new Map()]));
  for (const line of lines) {
    const phase = phases.find((p) => line.startMs >= p.startMs && line.startMs < p.endMs);
    if (phase === undefined) continue;
    const objects = /** @type {Map<string, ObjectCounts>} */ (out.get(phase.name));
    let c = objects.get(line.obj);
    if (c === undefined) {
      c = { requests: 0, alarms: 0, ...zeroTallies(), busyMs: 0, intervals: [] };
      objects.set(line.obj, c);
    }
    if (line.op === "alarm") c.alarms++;
    else if (line.op !== "delivery") c.requests++;
    for (const k of TALLIES) c[k] += line[k] ?? 0;
    c.intervals.push([line.startMs, line.startMs + Math.max(line.durMs, 0)]);
  }
  for (const objects of out.values()) for (const c of objects.values()) c.busyMs = unionMs(c.intervals);
  return out;
}

/**
 * One phase's summary: totals by object kind, and the busiest object (requests + alarms per second).
 * @param {Map<string, ObjectCounts>} objects
 * @param {number} seconds
 */
export function summarize(objects, seconds) {
  /** @type {Record<string, { objects: number, requests: number, alarms: number, rowsRead: number, rowsWritten: number, frames: number, deliveries: number, alarmsSet: number, busyS: number }>} */
  const byKind = {};
  let busiest = { obj: "", kind: "", reqPerS: 0 };
  for (const [obj, c] of objects) {
    const kind = kindOf(obj);
    const k = (byKind[kind] ??= { objects: 0, requests: 0, alarms: 0, ...zeroTallies(), busyS: 0 });
    k.objects++;
    k.requests += c.requests;
    k.alarms += c.alarms;
    for (const t of TALLIES) k[t] += c[t];
    k.busyS += c.busyMs / 1000;
    const reqPerS = (c.requests + c.alarms) / seconds;
    if (reqPerS > busiest.reqPerS) busiest = { obj, kind, reqPerS };
  }
  return { byKind, busiest };
}

/**
 * Project a measured phase to `claims` claims, as docs/scale.md explains: a per-claim (or
 * per-scope) object keeps its own per-operation counts, so its rate is the measured one
 * scaled by how much more often it is called (`perObjectFactor`); a shared object's load
 * (shards, the index) is scaled by the total operation rate and divided over the shards the
 * deployment configures, except that the index receives at most one batch per shard per
 * forwarding window.
 * @param {ReturnType<typeof summarize>} measured
 * @param {{ seconds: number, opsPerS: number, perObjectFactor: number, shardsMeasured: number,
 *   opsPerSProjected: number, shardsProjected: number, forwardWindowS: number }} p
 * @returns {{ busiestReqPerS: number, busiestKind: string, shardReqPerS: number, indexReqPerS: number }}
 */
export function projectPhase(measured, p) {
  const k = measured.byKind;
  const rate = (/** @type {string} */ kind) => {
    const c = k[kind];
    return c === undefined ? 0 : (c.requests + c.alarms) / p.seconds;
  };
  const scale = p.opsPerS === 0 ? 0 : p.opsPerSProjected / p.opsPerS;
  // Shards: the measured total over all shards, scaled with the operations, spread over the configured count.
  const shardReqPerS = (rate("index-shard") * scale) / p.shardsProjected;
  const indexReqPerS = Math.min(rate("index") * scale, p.shardsProjected / p.forwardWindowS + rate("index"));
  let ownBusiest = 0;
  let ownKind = "";
  for (const kind of ["claim", "scope", "generation"]) {
    const c = k[kind];
    if (c === undefined || c.objects === 0) continue;
    // The busiest own object's rate, times how much more often it is called.
    const perObject =
      measured.busiest.kind === kind ? measured.busiest.reqPerS : (c.requests + c.alarms) / p.seconds / c.objects;
    const projected = perObject * p.perObjectFactor;
    if (projected > ownBusiest) {
      ownBusiest = projected;
      ownKind = kind;
    }
  }
  const candidates = [
    { kind: ownKind, r: ownBusiest },
    { kind: "index-shard", r: shardReqPerS },
    { kind: "index", r: indexReqPerS },
  ].sort((a, b) => b.r - a.r);
  const top = /** @type {{ kind: string, r: number }} */ (candidates[0]);
  return { busiestReqPerS: top.r, busiestKind: top.kind, shardReqPerS, indexReqPerS };
}

/**
 * Monthly list price of a steady state that repeats forever: `perSecond` of each billed unit.
 * @param {{ workerRequests: number, objectRequests: number, busyObjectS: number, rowsRead: number, rowsWritten: number, storageGb: number }} perSecond
 */
export function monthlyUsd(perSecond) {
  const m = SECONDS_PER_MONTH;
  return (
    (perSecond.workerRequests * m * PRICES.workerRequestsPerM) / 1e6 +
    (perSecond.objectRequests * m * PRICES.objectRequestsPerM) / 1e6 +
    (perSecond.busyObjectS * OBJECT_GB * m * PRICES.durationPerMGbS) / 1e6 +
    (perSecond.rowsRead * m * PRICES.rowsReadPerM) / 1e6 +
    (perSecond.rowsWritten * m * PRICES.rowsWrittenPerM) / 1e6 +
    perSecond.storageGb * PRICES.storagePerGbMonth
  );
}

/**
 * How incoming WebSocket messages are billed: `free` is Cloudflare's documented reading for
 * messages the runtime auto-responds to (they "will not incur additional wall-clock time,
 * and so they will not be charged"); `twentyToOne` bills them as other incoming messages,
 * 20 messages to one request.
 */
export const WS_MESSAGE_BILLING = { free: 0, twentyToOne: 1 / 20 };

/**
 * @typedef {{ workerRequestsPerS: number, objectRequestsPerS: number, wsBilledPerS: number,
 *   requestsPerS: number, claimObjectRequestsPerS: number, busiestReqPerS: number,
 *   busiestKind: string, rowsWrittenPerS: number, alarmWritesPerS: number,
 *   usdPerMonth: number }} SessionProjection
 */

/**
 * Project a measured steady state of bound claims (docs/scale.md "Sessions") to
 * `targetClaims` claims under `targetGenerations` generations, measured at the target's
 * keepalive period and ttl (so no object is called more often than measured):
 * - a generation object's load is its own (its keepalives, alarms, rows), so the totals of
 *   generation objects, the Worker requests and the WebSocket messages scale with the
 *   generation count; a claim object's with the claim count; a shared object's (the
 *   listing's) with the generation count too, all on one object (none is expected);
 * - the busiest object is the busiest measured own object at its measured rate, or a shared
 *   kind's scaled total;
 * - requests billed are Worker requests + object requests (metered calls and alarms) +
 *   incoming WebSocket messages × `wsBilledPerMessage` ({@link WS_MESSAGE_BILLING});
 * - rows written are the SQL rows plus the alarm writes (each setAlarm() is billed as a row
 *   written); storage 4 KB per claim, as for the renewal projection.
 * @param {ReturnType<typeof summarize>} measured
 * @param {{ seconds: number, generations: number, claims: number, workerRequests: number,
 *   wsMessagesIn: number, targetGenerations: number, targetClaims: number,
 *   wsBilledPerMessage: number }} p
 * @returns {SessionProjection}
 */
export function projectSessions(measured, p) {
  const perGeneration = p.targetGenerations / p.generations;
  const perClaim = p.targetClaims / p.claims;
  const rate = (/** @type {number} */ n, /** @type {string} */ kind) =>
    ((kind === "claim" ? perClaim : perGeneration) * n) / p.seconds;
  let objectRequestsPerS = 0;
  let busyObjectS = 0;
  let rowsRead = 0;
  let rowsWrittenPerS = 0;
  let alarmWritesPerS = 0;
  let busiest = { kind: measured.busiest.kind, r: measured.busiest.reqPerS };
  for (const [kind, k] of Object.entries(measured.byKind)) {
    objectRequestsPerS += rate(k.requests + k.alarms, kind);
    busyObjectS += rate(k.busyS, kind);
    rowsRead += rate(k.rowsRead, kind);
    rowsWrittenPerS += rate(k.rowsWritten, kind);
    alarmWritesPerS += rate(k.alarmsSet, kind);
    const shared = kind === "index" || kind === "index-shard";
    if (shared && rate(k.requests + k.alarms, kind) > busiest.r)
      busiest = { kind, r: rate(k.requests + k.alarms, kind) };
  }
  const claim = measured.byKind["claim"];
  const workerRequestsPerS = (p.workerRequests * perGeneration) / p.seconds;
  const wsBilledPerS = ((p.wsMessagesIn * perGeneration) / p.seconds) * p.wsBilledPerMessage;
  const usdPerMonth = monthlyUsd({
    workerRequests: workerRequestsPerS,
    objectRequests: objectRequestsPerS + wsBilledPerS,
    busyObjectS,
    rowsRead,
    rowsWritten: rowsWrittenPerS + alarmWritesPerS,
    storageGb: (p.targetClaims * 4096) / 1e9,
  });
  return {
    workerRequestsPerS,
    objectRequestsPerS,
    wsBilledPerS,
    requestsPerS: workerRequestsPerS + objectRequestsPerS + wsBilledPerS,
    claimObjectRequestsPerS: claim === undefined ? 0 : rate(claim.requests + claim.alarms, "claim"),
    busiestReqPerS: busiest.r,
    busiestKind: busiest.kind,
    rowsWrittenPerS,
    alarmWritesPerS,
    usdPerMonth,
  };
}

/**
 * Today's steady state for comparison with {@link projectSessions}: every claim renewed on
 * its own, one Worker request and the claim object's measured work per renewal, projected to
 * `targetClaims` renewed every `renewEveryS`, priced the same way (alarm writes as rows).
 * Only claim objects count, as in bench/scale.mjs's monthly figure.
 * @param {ReturnType<typeof summarize>} measured the renewals' steady phase
 * @param {{ renewals: number, targetClaims: number, renewEveryS: number, perObjectFactor: number }} p `perObjectFactor`: how much more often a claim renews than measured
 * @returns {SessionProjection}
 */
export function projectRenewals(measured, p) {
  const c = measured.byKind["claim"];
  const renewPerS = p.targetClaims / p.renewEveryS;
  const perRenew = (/** @type {number} */ x) => (p.renewals === 0 ? 0 : (renewPerS * x) / p.renewals);
  const objectRequestsPerS = perRenew((c?.requests ?? 0) + (c?.alarms ?? 0));
  const rowsWrittenPerS = perRenew(c?.rowsWritten ?? 0);
  const alarmWritesPerS = perRenew(c?.alarmsSet ?? 0);
  const busiest = measured.busiest.kind === "claim" ? measured.busiest.reqPerS : 0;
  return {
    workerRequestsPerS: renewPerS,
    objectRequestsPerS,
    wsBilledPerS: 0,
    requestsPerS: renewPerS + objectRequestsPerS,
    claimObjectRequestsPerS: objectRequestsPerS,
    busiestReqPerS: busiest * p.perObjectFactor,
    busiestKind: "claim",
    rowsWrittenPerS,
    alarmWritesPerS,
    usdPerMonth: monthlyUsd({
      workerRequests: renewPerS,
      objectRequests: objectRequestsPerS,
      busyObjectS: perRenew(c?.busyS ?? 0),
      rowsRead: perRenew(c?.rowsRead ?? 0),
      rowsWritten: rowsWrittenPerS + alarmWritesPerS,
      storageGb: (p.targetClaims * 4096) / 1e9,
    }),
  };
}
