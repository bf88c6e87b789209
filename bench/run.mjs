#!/usr/bin/env node
/**
 * `npm run bench`: measure the server `npm start` runs, on loopback, and print a table.
 *
 *   node bench/run.mjs [--duration=10] [--phases=healthz,claims,coord,handover,fanout,expiry]
 *                      [--max-watchers=1000] [--server=npm-start|direct] [--tag=NAME]
 *                      [--rtt-ms=MS] [--write-doc] [--help]
 *
 * Options follow the repository's strict rule (bench/options.mjs): an unknown or malformed
 * one exits 2 before anything starts.
 *
 * The server is the serving half of `npm start` (bench/server.mjs: built once, then
 * started per measurement on a free port with a fresh temporary state directory, so no
 * measurement inherits another's objects or memory). `--server=direct` talks to the same
 * workerd on its own socket, without the Node front (a diagnostic, labelled as such);
 * `TMPDIR=/dev/shm` puts the servers' state on tmpfs (another diagnostic: it shows what the
 * disk's fsync costs). `--rtt-ms=MS` puts every client behind the WAN relay
 * (bench/wan-relay.mjs), started per measurement with the server: it adds what a no-op
 * (`GET /healthz`) does not already take on loopback, then the no-op's median through it is
 * measured (the row's `rttMs`, which latencies are divided by) and a measurement more than
 * 2 ms off is refused (recorded as failed). `--tag` names the results file (default `latest`, or `direct`).
 *
 * The memory of the server's whole process group at the end of each measurement is
 * reported. Every loop is bounded by time and count and the whole run by a hard limit, so
 * it always stops by itself; Ctrl-C stops the servers and removes the temporary
 * directories (bench/cleanup.mjs). Results go to bench/results/<tag>.json; `--write-doc`
 * also rewrites the generated section of docs/BENCHMARKS.md. Not part of `npm test`: speed
 * is measured here, not asserted.
 * Exit status: 0 when every measurement succeeded, 1 when one failed or the hard limit hit.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { makeClient } from "./http.mjs";
import { SERVER_DESCRIPTIONS, startServer } from "./server.mjs";
import { hardLimit, stopAll } from "./cleanup.mjs";
import { expiry } from "./expiry.mjs";
import { claimCycles, claimReads, claimWriteCost, coordCycles, healthz } from "./throughput.mjs";
import { fanout, handover } from "./coord-latency.mjs";
import { BENCH_USAGE, parseBenchArgs } from "./options.mjs";
import { round } from "./stats.mjs";
import { calibratedRelay } from "./wan-relay.mjs";
import { commitInfo, describeMachine, load1m, machineInfo, writeDocSection } from "./report.mjs";
import { parseOrExit } from "../src/cli/options.mjs";

/** @typedef {import("./throughput.mjs").Throughput} Throughput */
/** @typedef {import("./coord-latency.mjs").Fanout} Fanout */
/** @typedef {{ latency: import("./stats.mjs").Summary, missing?: number }} Latency */
/** @typedef {Throughput | Latency | Fanout} PhaseResult */
/**
 * One row of the results: what was measured, its figures (or why it failed), and the
 * server's memory and the machine's load at its end.
 * @typedef {{ name: string, kind: string, clients: number, serverRssMb: number, loadAvg1m: number, rttMs?: number }
 *   & ({ error: string } | (Throughput & { percentOfCeiling?: number }) | Latency | Fanout)} Measurement
 */

const TOKEN = "dev-token";
const HARD_LIMIT_MS = 14 * 60_000;

const options = parseOrExit("bench", BENCH_USAGE, () => parseBenchArgs(process.argv.slice(2)));
const { durationMs, phases, maxWatchers, server: serverKind, tag, rttMs: wanRttMs } = options;

hardLimit("bench", HARD_LIMIT_MS);

const client = await makeClient(TOKEN);
const machine = machineInfo();
const results = {
  command: `npm run bench -- ${process.argv.slice(2).join(" ")}`.replace(/ -- $/, ""),
  startedAt: new Date().toISOString(),
  commit: commitInfo(),
  machine,
  client: client.name,
  server: `${SERVER_DESCRIPTIONS[serverKind]} per measurement`,
  durationSeconds: durationMs / 1000,
  wanRttMs: wanRttMs ?? null,
  measurements: /** @type {Measurement[]} */ ([]),
  finishedAt: /** @type {string | undefined} */ (undefined),
};
console.log(
  `shiftlock bench — ${machine.nproc} cores, ${machine.memoryGiB} GiB, node ${machine.node}; ` +
    `state in ${machine.stateDir} (fsync of 4 KiB: ${machine.fsyncMsPer4KiB} ms)`,
);
console.log(`client: ${client.name}`);
console.log(`server: ${results.server}`);
if (wanRttMs !== undefined) console.log(`every client behind the WAN relay: ${wanRttMs} ms RTT`);
if (load1m() > machine.nproc) {
  console.log(`warning: load average ${load1m()} > ${machine.nproc} cores: figures will be low`);
}
console.log("");

/**
 * Run one measurement against its own fresh server; a failure is recorded, not fatal.
 * @param {string} name
 * @param {{ kind: string, clients: number }} params
 * @param {(ctx: import("./throughput.mjs").PhaseContext) => Promise<PhaseResult>} fn
 * @returns {Promise<Measurement>}
 */
async function measurement(name, params, fn) {
  process.stdout.write(`${name.padEnd(44)} `);
  /** @type {PhaseResult | { error: string }} */
  let result;
  /** @type {import("./server.mjs").RunningServer | undefined} */
  let server;
  /** @type {import("./wan-relay.mjs").Relay | undefined} */
  let relay;
  /** @type {number | undefined} */
  let rttMs;
  try {
    server = await startServer(serverKind);
    let url = server.url;
    if (wanRttMs !== undefined) {
      const noop = (/** @type {number} */ port) => () => client.call("GET", `http://127.0.0.1:${port}/healthz`);
      const targetPort = Number(new URL(server.url).port);
      const wan = await calibratedRelay({ targetPort, rttMs: wanRttMs, noop });
      relay = wan.relay;
      url = relay.rewrite(server.url);
      const check = wan.check;
      if (!check.ok) throw new Error(check.message);
      rttMs = check.rttMs;
    }
    const ns = `bench-${crypto.randomUUID().slice(0, 8)}`;
    const ctx = { url, client, ns, token: TOKEN, durationMs, maxCycles: 20_000 };
    result = await fn(ctx);
  } catch (err) {
    result = { error: err instanceof Error ? (err.message.split("\n")[0] ?? "") : String(err) };
  }
  await relay?.close();
  /** @type {Measurement} */
  const entry = {
    name,
    ...params,
    ...result,
    ...(rttMs === undefined ? {} : { rttMs }),
    serverRssMb: server?.rssMb() ?? 0,
    // Other work on the machine lowers every figure: record it next to the figure.
    loadAvg1m: load1m(),
  };
  await server?.stop();
  results.measurements.push(entry);
  console.log(describe(entry));
  return entry;
}

/** @param {Measurement} e */
function describe(e) {
  if ("error" in e) return `FAILED: ${e.error}`;
  const inRtts =
    e.rttMs === undefined || !("latency" in e) ? "" : ` (p50 ${inRtt(e.latency.p50, e.rttMs)} RTT, RTT ${e.rttMs} ms)`;
  if ("perSecond" in e) {
    const acquire =
      e.acquire === undefined
        ? ""
        : `; acquire p50 ${e.acquire.p50} ms${e.rttMs === undefined ? "" : ` = ${inRtt(e.acquire.p50, e.rttMs)} RTT`}`;
    return `${e.perSecond} cycles/s, ${round(e.perSecond * e.requestsPerCycle, 1)} req/s, p50 ${e.latency.p50} ms, p99 ${e.latency.p99} ms${inRtts}${acquire}`;
  }
  if ("delivery" in e) return `delivery p50 ${e.delivery.p50} ms, p99 ${e.delivery.p99} ms, missing ${e.missing}`;
  return `p50 ${e.latency.p50} ms, p99 ${e.latency.p99} ms (n=${e.latency.n})${inRtts}`;
}

/** A latency in round trips of the relay, 2 decimals. */
function inRtt(/** @type {number} */ ms, /** @type {number} */ rtt) {
  return round(ms / rtt, 2);
}

/** @type {Record<number, number>} cycles per second of the no-op route, by number of clients */
const ceiling = {};
for (const clients of [1, 32]) {
  if (phases.has("healthz")) {
    const e = await measurement(`no-op GET /healthz, ${clients} client(s)`, { kind: "healthz", clients }, (ctx) =>
      healthz(ctx, clients),
    );
    if ("perSecond" in e) ceiling[clients] = e.perSecond;
  }
}
if (phases.has("claims")) {
  await measurement("claims acquire replayed by operationId (no write)", { kind: "replay", clients: 1 }, (ctx) =>
    claimWriteCost(ctx, "replay"),
  );
  await measurement("claims renew (one write + alarm)", { kind: "renew", clients: 1 }, (ctx) =>
    claimWriteCost(ctx, "renew"),
  );
}
for (const clients of [1, 32]) {
  if (phases.has("claims")) {
    const what = clients === 1 ? "1 client" : "32 clients";
    await measurement(`claims GET (read, no write), 1 claim, ${what}`, { kind: "read", clients }, (ctx) =>
      claimReads(ctx, clients),
    );
  }
  if (phases.has("claims")) {
    const what = clients === 1 ? "1 claim, 1 client" : "32 claims, 32 clients";
    await measurement(`claims acquire→release, ${what}`, { kind: "claims", clients }, (ctx) =>
      claimCycles(ctx, clients),
    );
  }
  if (phases.has("coord")) {
    const what = clients === 1 ? "1 scope, 1 client" : "32 scopes, 32 clients";
    await measurement(`coord lease→publish→release, ${what}`, { kind: "coord", clients }, (ctx) =>
      coordCycles(ctx, clients),
    );
  }
}
if (phases.has("handover")) {
  await measurement("coord hand-over release→grant (waitMs)", { kind: "handover", clients: 2 }, (ctx) =>
    handover(ctx, 300),
  );
}
if (phases.has("fanout")) {
  for (const n of [1, 100, 1000].filter((n) => n <= maxWatchers)) {
    await measurement(`coord publish→watcher, ${n} watcher(s)`, { kind: "fanout", clients: n }, (ctx) =>
      fanout(ctx, n, n >= 1000 ? 20 : 50),
    );
  }
}
if (phases.has("expiry")) {
  await measurement("claims expiry (ttl 200 ms) → watcher", { kind: "expiry", clients: 1 }, (ctx) =>
    expiry(ctx, "claims", 30),
  );
  await measurement("coord lease expiry (ttl 200 ms) → watcher", { kind: "expiry", clients: 1 }, (ctx) =>
    expiry(ctx, "coord", 30),
  );
}

// Requests per second as a share of the no-op ceiling with the same number of clients.
for (const e of results.measurements) {
  if (!("perSecond" in e) || e.kind === "healthz") continue;
  const c = ceiling[e.clients];
  if (c) e.percentOfCeiling = round((100 * e.perSecond * e.requestsPerCycle) / c, 1);
}
results.finishedAt = new Date().toISOString();
await client.close();
await stopAll();

const table = renderTables(results);
console.log(`\n${table}`);
mkdirSync("bench/results", { recursive: true });
const resultsFile = `bench/results/${tag}.json`;
writeFileSync(resultsFile, `${JSON.stringify(results, null, 2)}\n`);
console.log(`raw results: ${resultsFile}`);
if (options.writeDoc) writeDoc(results, table);
const failed = results.measurements.filter((e) => "error" in e).length;
process.exit(failed === 0 ? 0 : 1);

/**
 * Markdown tables of every measurement.
 * @param {typeof results} r
 */
function renderTables(r) {
  const rows = [
    "| measurement | cycles/s | requests/s | cycle p50 ms | cycle p99 ms | % of no-op ceiling | RTT ms | cycle p50 in RTTs | acquire p50 ms (RTTs) | server RSS MB | load 1m |",
    "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
  ];
  const lat = [
    "| measurement | samples | p50 ms | p99 ms | max ms | RTT ms | p50 in RTTs | p99 in RTTs | notes |",
    "|---|---:|---:|---:|---:|---:|---:|---:|---|",
  ];
  /** RTT columns: the relay's measured RTT and a latency in it, blank without the relay. */
  const rtt = (/** @type {Measurement} */ e, /** @type {number[]} */ ...ms) =>
    [e.rttMs ?? "", ...ms.map((x) => (e.rttMs === undefined ? "" : inRtt(x, e.rttMs)))].join(" | ");
  for (const e of r.measurements) {
    if ("error" in e) {
      rows.push(
        `| ${e.name} | failed: ${e.error.replaceAll("|", "/")} | | | | | | | | ${e.serverRssMb} | ${e.loadAvg1m} |`,
      );
    } else if ("perSecond" in e) {
      const pct =
        e.kind === "healthz" ? "(ceiling)" : e.percentOfCeiling === undefined ? "" : `${e.percentOfCeiling} %`;
      rows.push(
        `| ${e.name} | ${e.perSecond} | ${round(e.perSecond * e.requestsPerCycle, 1)} | ${e.latency.p50} | ${e.latency.p99} | ${pct} | ${rtt(e, e.latency.p50)} | ${e.acquire === undefined ? "" : `${e.acquire.p50}${e.rttMs === undefined ? "" : ` (${inRtt(e.acquire.p50, e.rttMs)})`}`} | ${e.serverRssMb} | ${e.loadAvg1m} |`,
      );
    } else if ("delivery" in e) {
      const notes = `last watcher p50 ${e.lastWatcher.p50} / p99 ${e.lastWatcher.p99} ms; publish reply p50 ${e.publishReply.p50} ms; ${e.missing} missing; ${e.watchers} sockets ready in ${e.connectAllMs} ms; server ${e.serverRssMb} MB; load ${e.loadAvg1m}`;
      lat.push(
        `| ${e.name} | ${e.delivery.n} | ${e.delivery.p50} | ${e.delivery.p99} | ${e.delivery.max} | ${rtt(e, e.delivery.p50, e.delivery.p99)} | ${notes} |`,
      );
    } else {
      const missing = e.missing === undefined ? "" : `${e.missing} missing; `;
      lat.push(
        `| ${e.name} | ${e.latency.n} | ${e.latency.p50} | ${e.latency.p99} | ${e.latency.max} | ${rtt(e, e.latency.p50, e.latency.p99)} | ${missing}server ${e.serverRssMb} MB; load ${e.loadAvg1m} |`,
      );
    }
  }
  return `${rows.join("\n")}\n\n${lat.join("\n")}`;
}

/**
 * Replace the generated section of docs/BENCHMARKS.md for this run's tag, keeping the
 * hand-written analysis around it.
 * @param {typeof results} r
 * @param {string} tables from {@link renderTables}
 */
function writeDoc(r, tables) {
  writeDocSection(
    tag,
    [
      `Command: \`${r.command}\` at commit ${r.commit} (started ${r.startedAt}).`,
      "",
      `Machine: ${describeMachine(r.machine)}. Client: ${r.client}, on the same machine. Server: ${r.server}. Each throughput figure is a ${r.durationSeconds} s closed loop after a short warm-up.`,
      "",
      tables,
    ].join("\n"),
  );
}
