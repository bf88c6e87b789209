/**
 * The session workload's report (bench/scale-sessions.mjs, docs/scale.md "Sessions"): its
 * per-phase table, the meter lines by entry point, the lease-end and hand-over figures, and
 * the projection to 100,000 claims beside per-claim renewals; returns its part of
 * bench:scale's JSON line.
 *
 * Guarantees: prints only what the run measured and bench/scale-model.mjs projected from it.
 * Does not: measure or project anything itself.
 */
import { PRICES, SECONDS_PER_MONTH } from "./scale-model.mjs";

const round = (/** @type {number} */ x) => Math.round(x * 10) / 10;

/**
 * Print the workload's tables (per phase, then the projection beside today's per-claim
 * renewals when `today` is given) and return its part of the JSON line.
 * @param {Awaited<ReturnType<typeof import("./scale-sessions.mjs").runSessionWorkload>>} r
 * @param {import("./scale-model.mjs").SessionProjection | undefined} today per-claim renewals
 *   projected the same way (bench/scale-model.mjs `projectRenewals`)
 */
export function reportSessions(r, today) {
  console.log(
    `\n## sessions: ${r.G * r.C} bound claims under ${r.G} generations (ttl ${r.ttlMs / 1000} s, keepalive every ${r.keepaliveMs / 1000} s, LEASE_NOTICE_TTLS ${r.noticeTtls})`,
  );
  console.log(
    "| phase | s | Worker req | Worker req/s | WS msgs in | object req | object req/s | claim-object req | rows written | alarm writes | busiest object (req/s) |",
  );
  console.log("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|");
  for (const p of r.phases) {
    const { seconds, summary } =
      /** @type {{ seconds: number, summary: ReturnType<typeof import("./scale-model.mjs").summarize> }} */ (
        r.measured[p.name]
      );
    const kinds = Object.values(summary.byKind);
    const objectReq = kinds.reduce((a, k) => a + k.requests + k.alarms, 0);
    const claim = summary.byKind["claim"];
    // The end reaches each bound claim by the generation's call (one request per claim, every
    // watcher heard it), which the claim object does not meter (its leaseEnded entry point).
    const ended = { "sessions-lease-end": r.endedGenerations, "sessions-lapse": 1 }[p.name] ?? 0;
    const leaseEnds = ended > 0 ? ` + ${ended * r.C} lease ends` : "";
    const sent = /** @type {{ workerRequests: number, wsIn: number }} */ (r.sent[p.name]);
    const cells = [
      p.name,
      seconds.toFixed(1),
      sent.workerRequests,
      (sent.workerRequests / seconds).toFixed(1),
      sent.wsIn,
      objectReq,
      (objectReq / seconds).toFixed(1),
      `${(claim?.requests ?? 0) + (claim?.alarms ?? 0)}${leaseEnds}`,
      kinds.reduce((a, k) => a + k.rowsWritten, 0),
      kinds.reduce((a, k) => a + k.alarmsSet, 0),
      `${summary.busiest.kind || "none"} ${summary.busiest.reqPerS.toFixed(1)}`,
    ];
    console.log(`| ${cells.join(" | ")} |`);
  }
  console.log("\nmeter lines by object kind and entry point:");
  for (const p of r.phases) {
    const counts = Object.entries(r.ops[p.name] ?? {}).sort((a, b) => b[1] - a[1]);
    console.log(`- ${p.name}: ${counts.map(([k, n]) => `${k} ${n}`).join(", ") || "none"}`);
  }
  const wokeOnPing = r.measured["sessions-steady-channel"]?.summary.byKind["generation"];
  console.log(
    `\nsteady, per keepalive: channel ${r.keepalives.channel} pings (${r.pongsChannel} pongs over the phase and the switch), ${r.perKeepalive.channel.rows.toFixed(3)} SQL rows + ${r.perKeepalive.channel.alarmWrites.toFixed(3)} alarm writes; HTTP ${r.keepalives.http} keepalives, ${r.perKeepalive.http.rows.toFixed(3)} SQL rows + ${r.perKeepalive.http.alarmWrites.toFixed(3)} alarm writes. Generation objects in the channel's steady state: ${wokeOnPing?.requests ?? 0} requests, ${wokeOnPing?.alarms ?? 0} alarms.`,
  );
  console.log(
    `a lease ending (lease/end, ${r.C} claims, ${r.endedGenerations} times): the last of ${r.C} watchers heard expired after ${r.expiryToWatchersMs.join(", ")} ms; a lease lapsing (no keepalive, channel closed): watchers heard expired from ${r.lapseFirstMs} to ${r.lapseToWatchersMs} ms after its deadline (the last ping's send time + ttl: the deadline is no earlier; the alarm notices a lapse ${r.noticeTtls === 0 ? "at the deadline" : `up to ${(r.noticeTtls * r.ttlMs) / 1000} s after it`})`,
  );
  console.log(
    `hand-over of ${r.G * r.C} claims in ${r.handoffS.toFixed(1)} s; projected to ${r.target.claims} in ${r.target.handoffS} s over ${r.target.shards} shards: busiest ${r.handoffP.busiestKind} ${r.handoffP.busiestReqPerS.toFixed(1)} req/s`,
  );
  console.log(
    `the busiest generation object took ${r.handoffGenerationMax} requests in the hand-over (its ${r.C} claims' lease checks and binds, in two batches): a burst as long as a batch, not a rate`,
  );
  for (const drop of r.drops) console.log(`reopened: ${drop}`);
  console.log(
    `slowest answer to a keepalive ${r.slowest.keepaliveMs} ms, to a ping ${r.slowest.pongMs} ms (the local server's load)`,
  );
  if (r.frontRetries > 0) console.log(`${r.frontRetries} requests sent again after a 502/503 of the local front`);
  const row = (/** @type {string} */ label, /** @type {import("./scale-model.mjs").SessionProjection} */ p) =>
    `| ${label} | ${p.workerRequestsPerS.toFixed(0)} | ${p.objectRequestsPerS.toFixed(0)} | ${p.wsBilledPerS.toFixed(0)} | ${p.requestsPerS.toFixed(0)} | ${p.claimObjectRequestsPerS.toFixed(0)} | ${(p.rowsWrittenPerS + p.alarmWritesPerS).toFixed(0)} (${p.alarmWritesPerS.toFixed(0)} alarms) | ${p.busiestKind} ${p.busiestReqPerS.toFixed(2)} | $${Math.round(p.usdPerMonth)} | $${Math.round((p.alarmWritesPerS * SECONDS_PER_MONTH * PRICES.rowsWrittenPerM) / 1e6)} |`;
  console.log(
    `\n## sessions projected: ${r.target.claims} claims under ${r.target.generations} generations (list prices ${JSON.stringify(PRICES)}; pings: documented reading free, the 20:1 reading beside it)`,
  );
  console.log(
    "| steady state | Worker req/s | object req/s | WS msgs billed/s | billed req/s | claim-object req/s | rows written/s | busiest object req/s | per month | of which alarm writes |",
  );
  console.log("|---|---:|---:|---:|---:|---:|---:|---|---:|---:|");
  if (today !== undefined) console.log(row("per-claim renewals (today)", today));
  console.log(row("sessions, lease channel (pings free, as documented)", r.channel));
  console.log(row("sessions, lease channel (pings billed 20:1)", r.channelTwentyToOne));
  console.log(row("sessions, HTTP keepalives", r.http));
  const projected = (/** @type {import("./scale-model.mjs").SessionProjection} */ p) => ({
    requestsPerS: round(p.requestsPerS),
    claimObjectRequestsPerS: round(p.claimObjectRequestsPerS),
    // As the renewal projection's: the busiest object in the steady state and in a hand-over of every claim in 60 s.
    busiestReqPerS: { steady: round(p.busiestReqPerS), handoff: round(r.handoffP.busiestReqPerS) },
    usdPerMonth: Math.round(p.usdPerMonth),
  });
  return {
    boundClaims: r.G * r.C,
    generations: r.G,
    leaseNoticeTtls: r.noticeTtls,
    keepalives: r.keepalives.channel,
    rowsWrittenPerKeepalive: Math.round(r.perKeepalive.channel.rows * 1000) / 1000,
    alarmWritesPerKeepalive: Math.round(r.perKeepalive.channel.alarmWrites * 1000) / 1000,
    http: {
      keepalives: r.keepalives.http,
      rowsWrittenPerKeepalive: Math.round(r.perKeepalive.http.rows * 1000) / 1000,
      alarmWritesPerKeepalive: Math.round(r.perKeepalive.http.alarmWrites * 1000) / 1000,
    },
    expiryToWatchersMsMax: Math.max(...r.expiryToWatchersMs),
    expiryToWatchersMs: r.expiryToWatchersMs,
    lapseToWatchersMsMax: r.lapseToWatchersMs,
    handoffS: round(r.handoffS),
    projected100k: projected(r.channel),
    projected100kPingsBilled: projected(r.channelTwentyToOne),
    projected100kHttp: projected(r.http),
  };
}
