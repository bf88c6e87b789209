#!/usr/bin/env node
/**
 * `npm run soak`: mixed traffic through the server `npm start` runs for a fixed time, with
 * the resident memory of the server's whole process group sampled at a fixed interval.
 *
 *   node bench/soak.mjs [--duration-s=600] [--sample-s=10] [--watchers=100]
 *                       [--server=npm-start|direct] [--tag=soak] [--write-doc]
 *
 * Traffic, all closed loops on loopback, each worker on its own objects so every answer is
 * known in advance:
 * - 4 claims workers, each cycling over 5 claims: acquire → renew → renew → release;
 * - 2 coord workers, each on its own object-store scope: try the lease → publish → release;
 * - 1 generations worker: register → standby → active → retired → GET;
 * - `--watchers` WebSockets opened before the traffic starts: half watch the 20 claims,
 *   half the 2 scopes. Every watcher acknowledges what it processed (docs/protocol.md#watch-flow-control: claims
 *   `{"type":"ack","version":"N"}`, coord `{"type":"ack","count":N}` with N the events since
 *   the last ack) every 256 events and at least once a second.
 *
 * Errors (must be 0): any request answered with another status than the route's success,
 * any request that fails, a watcher closed by the server, a claims event out of version
 * order or of an unexpected kind, a coord publish out of generation order, and at the end
 * any watcher that did not receive exactly the events its claim or scope emitted (two per
 * cycle). Memory: the first sample when the watchers are open and the traffic starts, then
 * one every `--sample-s`; the verdict compares every sample after the first minute with the
 * one at 1 minute (±10 %). Runs shorter than 2 minutes use the sample at half time instead,
 * and say so.
 *
 * Guarantees: bounded by `--duration-s` plus a settle time of at most 5 s, and by a hard
 * limit (duration + 5 min); the server is stopped and its state removed at the end, on
 * Ctrl-C and at the limit (bench/cleanup.mjs). Writes bench/results/<tag>.json and
 * bench/results/<tag>.svg; `--write-doc` also rewrites the `soak` section of
 * docs/BENCHMARKS.md and docs/soak-memory.svg. Exit status 0 only with no error.
 * Does not: vary the load over time, restart the server, or measure latency.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { parseOrExit } from "../src/cli/options.mjs";
import { hardLimit, stopAll } from "./cleanup.mjs";
import { expectStatus, makeClient } from "./http.mjs";
import { parseSoakArgs, SOAK_USAGE } from "./options.mjs";
import { commitInfo, describeMachine, load1m, machineInfo, markdownTable, writeDocSection } from "./report.mjs";
import { startServer } from "./server.mjs";
import { round } from "./stats.mjs";
import { lineChart } from "./svg-chart.mjs";
import { Watcher } from "./watchers.mjs";

const TOKEN = "dev-token";
const TTL_MS = 15_000;
const CLAIMS_WORKERS = 4;
const CLAIMS_PER_WORKER = 5;
const COORD_WORKERS = 2;
const SETTLE_MS = 5_000;

const options = parseOrExit("soak", SOAK_USAGE, () => parseSoakArgs(process.argv.slice(2)));
hardLimit("soak", options.durationMs + 5 * 60_000);
const startedAt = new Date().toISOString();
const machine = machineInfo();
console.log(
  `shiftlock soak — ${options.durationMs / 1000} s, memory every ${options.sampleMs / 1000} s, ${options.watchers} watchers; ` +
    `${machine.nproc} cores, ${machine.memoryGiB} GiB, load ${machine.loadAvg1mAtStart}`,
);

const server = await startServer(options.server);
const client = await makeClient(TOKEN);
const ns = `soak-${crypto.randomUUID().slice(0, 8)}`;
const base = `${server.url}/v1/ns/${ns}`;
const wsBase = base.replace(/^http/, "ws");
/** @param {string} s */
const enc = (s) => encodeURIComponent(s);

let t0 = performance.now();
const elapsedS = () => round((performance.now() - t0) / 1000, 1);
let requests = 0;
let events = 0;
let errorCount = 0;
/** @type {string[]} the first errors, for the report */
const errors = [];
/** @param {string} message */
function error(message) {
  errorCount++;
  if (errors.length < 20) errors.push(`t=${elapsedS()} s: ${message}`);
}

/**
 * One request; an unexpected status or a failure is counted as an error.
 * @param {string} method
 * @param {string} url
 * @param {unknown} body
 * @param {number} status the route's success status
 * @param {string} what
 * @returns {Promise<{ ok: true, body: import("./http.mjs").Body } | { ok: false }>}
 */
async function call(method, url, body, status, what) {
  requests++;
  try {
    return { ok: true, body: expectStatus(await client.call(method, url, body), status, what) };
  } catch (err) {
    error(err instanceof Error ? err.message : String(err));
    return { ok: false };
  }
}

/** Events each claim and scope emitted (what every watcher of it must receive). */
const emitted = new Map();
/** @param {string} key */
const emit = (key) => emitted.set(key, (emitted.get(key) ?? 0) + 1);

const claimNames = Array.from({ length: CLAIMS_WORKERS * CLAIMS_PER_WORKER }, (_, i) => {
  return `c-${Math.floor(i / CLAIMS_PER_WORKER)}-${i % CLAIMS_PER_WORKER}`;
});
const scopeNames = Array.from({ length: COORD_WORKERS }, (_, w) => `s-${w}`);

// Watchers first, so they see every event of the run.
let closing = false;
/** @type {{ watcher: Watcher, key: string }[]} */
const watchers = [];
const claimWatchers = Math.ceil(options.watchers / 2);
for (let i = 0; i < options.watchers; i += 25) {
  const batch = [];
  for (let j = i; j < Math.min(options.watchers, i + 25); j++) {
    const isClaim = j < claimWatchers;
    const name = isClaim ? claimNames[j % claimNames.length] : scopeNames[j % scopeNames.length];
    const key = `${isClaim ? "claim" : "scope"}:${name}`;
    const url = isClaim
      ? `${wsBase}/claims/${enc(String(name))}/watch`
      : `${wsBase}/volumes/soak/stores/${enc(String(name))}/watch`;
    const watcher = new Watcher(url, TOKEN, isClaim ? "claims" : "coord");
    let lastVersion = -1n;
    let lastGeneration = -1n;
    watcher.onEvent = (msg) => {
      events++;
      if (isClaim) {
        const version = BigInt(msg.claim?.version ?? "0");
        if (version <= lastVersion) error(`${key}: claims event version ${version} after ${lastVersion}`);
        lastVersion = version;
        if (msg.reason !== "acquired" && msg.reason !== "released") error(`${key}: unexpected event ${msg.reason}`);
      } else if (msg.rootChanged !== null && msg.rootChanged !== undefined) {
        const generation = BigInt(msg.generation ?? "0");
        if (generation <= lastGeneration) error(`${key}: publish generation ${generation} after ${lastGeneration}`);
        lastGeneration = generation;
      }
    };
    watcher.onClose = (code, reason) => {
      if (!closing) error(`${key}: watcher closed by the server (${code} ${reason})`);
    };
    watchers.push({ watcher, key });
    batch.push(watcher.ready);
  }
  await Promise.all(batch);
}
const ackTimer = setInterval(() => watchers.forEach((w) => w.watcher.ack()), 1_000);
console.log(`${watchers.length} watchers ready; traffic for ${options.durationMs / 1000} s`);

/**
 * @typedef {object} Sample
 * @property {number} t seconds since the traffic started
 * @property {number} rssMb the server's whole process group
 * @property {Record<string, number>} byProgram
 * @property {number} requestsPerSecond in the interval before the sample
 * @property {number} eventsPerSecond watcher messages parsed, in the interval
 * @property {number} loadAvg1m
 */
/** @type {Sample[]} */
const samples = [];
let last = { at: performance.now(), requests: 0, events: 0 };
function sample() {
  const now = performance.now();
  const seconds = Math.max(0.001, (now - last.at) / 1000);
  const memory = server.memory();
  const s = {
    t: round((now - t0) / 1000, 0),
    rssMb: memory.totalMb,
    byProgram: memory.byProgram,
    requestsPerSecond: samples.length === 0 ? 0 : round((requests - last.requests) / seconds, 1),
    eventsPerSecond: samples.length === 0 ? 0 : round((events - last.events) / seconds, 1),
    loadAvg1m: load1m(),
  };
  samples.push(s);
  last = { at: now, requests, events };
  console.log(
    `t=${String(s.t).padStart(4)} s  rss ${s.rssMb} MB (${Object.entries(s.byProgram)
      .map(([k, v]) => `${k} ${v}`)
      .join(
        ", ",
      )})  ${s.requestsPerSecond} req/s  ${s.eventsPerSecond} events/s  errors ${errorCount}  load ${s.loadAvg1m}`,
  );
}

t0 = performance.now();
const deadline = t0 + options.durationMs;
const running = () => performance.now() < deadline;
sample();
const sampler = setInterval(sample, options.sampleMs);
const pause = () => new Promise((r) => setTimeout(r, 100));

/** @param {number} w */
async function claimsWorker(w) {
  const generationId = `soak-gen-${w}`;
  for (let i = 0; running(); i++) {
    const name = `c-${w}-${i % CLAIMS_PER_WORKER}`;
    const url = `${base}/claims/${enc(name)}`;
    const acquired = await call("POST", `${url}/acquire`, { generationId, ttlMs: TTL_MS }, 200, "claims acquire");
    if (!acquired.ok) {
      await pause();
      continue;
    }
    emit(`claim:${name}`);
    const token = acquired.body.claim.fencingToken;
    for (let r = 0; r < 2; r++) {
      await call("POST", `${url}/renew`, { generationId, token, ttlMs: TTL_MS }, 200, "claims renew");
    }
    if ((await call("POST", `${url}/release`, { generationId, token }, 200, "claims release")).ok) {
      emit(`claim:${name}`);
    }
  }
}

/** @param {number} w */
async function coordWorker(w) {
  const name = `s-${w}`;
  const scope = `${base}/volumes/soak/stores/${enc(name)}`;
  for (let i = 0; running(); i++) {
    const granted = await call("POST", `${scope}/leases`, { participantId: `p-${w}`, ttlMs: TTL_MS }, 201, "lease");
    if (!granted.ok) {
      await pause();
      continue;
    }
    const lease = `${scope}/leases/${enc(granted.body.lease.leaseId)}`;
    if ((await call("POST", `${lease}/publish`, { root: { w, i } }, 200, "publish")).ok) emit(`scope:${name}`);
    if ((await call("DELETE", lease, undefined, 204, "lease release")).ok) emit(`scope:${name}`);
  }
}

async function generationsWorker() {
  for (let i = 0; running(); i++) {
    const id = `g-${i}`;
    const url = `${base}/generations/${enc(id)}`;
    const body = { id, service: "soak", instanceId: `i-${i}` };
    if (!(await call("POST", `${base}/generations`, body, 200, "generation register")).ok) {
      await pause();
      continue;
    }
    for (const state of ["standby", "active", "retired"]) {
      await call("PATCH", url, { state }, 200, `generation → ${state}`);
    }
    await call("GET", url, undefined, 200, "generation get");
  }
}

await Promise.all([
  ...Array.from({ length: CLAIMS_WORKERS }, (_, w) => claimsWorker(w)),
  ...Array.from({ length: COORD_WORKERS }, (_, w) => coordWorker(w)),
  generationsWorker(),
]);
clearInterval(sampler);
if (performance.now() - last.at > 1_000) sample();
const trafficSeconds = (performance.now() - t0) / 1000;

// Every watcher must have exactly the events of its claim or scope: wait for the last ones.
const missingFor = () => watchers.filter((w) => w.watcher.events !== (emitted.get(w.key) ?? 0));
const settleDeadline = performance.now() + SETTLE_MS;
while (missingFor().length > 0 && performance.now() < settleDeadline) await pause();
for (const w of missingFor()) {
  error(`${w.key}: watcher received ${w.watcher.events} events, the server emitted ${emitted.get(w.key) ?? 0}`);
}
closing = true;
clearInterval(ackTimer);
for (const w of watchers) w.watcher.close();
await client.close();
await stopAll();

// The verdict: every sample after the baseline within ±10 % of it.
const durationS = options.durationMs / 1000;
const baselineT = durationS >= 120 ? 60 : Math.round(durationS / 2);
const baseline = samples.find((s) => s.t >= baselineT) ?? samples.at(-1);
const after = samples.filter((s) => baseline !== undefined && s.t > baseline.t);
const deviations = after.map((s) => (baseline ? s.rssMb / baseline.rssMb - 1 : 0));
const maxUp = round(100 * Math.max(0, ...deviations), 1);
const maxDown = round(100 * Math.min(0, ...deviations), 1);
const within = deviations.every((d) => Math.abs(d) <= 0.1);
const lastSample = samples.at(-1);
const verdict =
  baseline === undefined || lastSample === undefined
    ? "no samples"
    : `RSS at ${baseline.t} s (${durationS >= 120 ? "after the first minute" : "half time: a short run"}): ${baseline.rssMb} MB; ` +
      `afterwards between ${maxDown} % and +${maxUp} % of it (last ${lastSample.rssMb} MB): ` +
      (within ? "**within ±10 %**" : "**not within ±10 %**");
const totals = {
  trafficSeconds: round(trafficSeconds, 1),
  requests,
  requestsPerSecond: round(requests / trafficSeconds, 1),
  watcherEvents: events,
  watchers: watchers.length,
  errors: errorCount,
};
const summary =
  `${totals.requests} requests in ${totals.trafficSeconds} s (${totals.requestsPerSecond}/s), ` +
  `${totals.watcherEvents} watcher events delivered to ${totals.watchers} watchers; errors: ${errorCount}.`;
const programs = [...new Set(samples.flatMap((s) => Object.keys(s.byProgram)))].sort();
const table = markdownTable(
  ["t s", "RSS MB (group)", ...programs.map((p) => `${p} MB`), "requests/s", "watcher events/s", "load 1m"],
  samples.map((s) => [
    s.t,
    s.rssMb,
    ...programs.map((p) => s.byProgram[p] ?? 0),
    s.requestsPerSecond,
    s.eventsPerSecond,
    s.loadAvg1m,
  ]),
  "r".repeat(programs.length + 5),
);
const colors = ["#1f5fbf", "#d9480f", "#2b8a3e", "#862e9c"];
const svg = lineChart({
  title: `shiftlock soak: resident memory of the npm start process group (${durationS} s)`,
  xLabel: "seconds since the traffic started",
  yLabel: "resident memory, MB",
  series: [
    { name: "whole group", color: "#111", points: samples.map((s) => [s.t, s.rssMb]) },
    ...programs
      .filter((p) => samples.some((s) => (s.byProgram[p] ?? 0) >= 10))
      .map((p, i) => ({
        name: p,
        color: colors[i % colors.length] ?? "#888",
        dashed: true,
        points: samples.map((s) => /** @type {[number, number]} */ ([s.t, s.byProgram[p] ?? 0])),
      })),
  ],
  ...(baseline
    ? {
        band: {
          from: baseline.rssMb * 0.9,
          to: baseline.rssMb * 1.1,
          fromX: baseline.t,
          label: "±10 % of the baseline",
        },
      }
    : {}),
});

console.log(`\n${summary}\n${verdict.replaceAll("**", "")}\n\n${table}`);
if (errors.length > 0) console.log(`\nfirst errors:\n  ${errors.join("\n  ")}`);
const results = {
  command: `npm run soak -- ${process.argv.slice(2).join(" ")}`.replace(/ -- $/, ""),
  startedAt,
  finishedAt: new Date().toISOString(),
  commit: commitInfo(),
  machine,
  client: client.name,
  server: server.description,
  totals,
  baseline: baseline ?? null,
  withinTenPercent: within,
  maxDeviationPercent: { up: maxUp, down: maxDown },
  errors,
  samples,
};
mkdirSync("bench/results", { recursive: true });
writeFileSync(`bench/results/${options.tag}.json`, `${JSON.stringify(results, null, 2)}\n`);
writeFileSync(`bench/results/${options.tag}.svg`, svg);
console.log(`raw results: bench/results/${options.tag}.json, chart bench/results/${options.tag}.svg`);
if (options.writeDoc) {
  writeFileSync("docs/soak-memory.svg", svg);
  writeDocSection(
    "soak",
    [
      `Command: \`${results.command}\` at commit ${results.commit} (started ${startedAt}).`,
      "",
      `Machine: ${describeMachine(machine)}. Client: ${client.name} and \`ws\`, on the same machine. Server: ${server.description}.`,
      "",
      `${summary} ${verdict}`,
      "",
      "![Resident memory of the server's process group during the soak](soak-memory.svg)",
      "",
      table,
      ...(errors.length > 0 ? ["", `First errors: ${errors.join("; ")}`] : []),
    ].join("\n"),
  );
}
process.exit(errorCount === 0 ? 0 : 1);
