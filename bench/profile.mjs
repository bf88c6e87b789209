#!/usr/bin/env node
/**
 * `npm run bench:profile`: a CPU profile of the Worker's isolate while it serves a closed
 * loop of claim acquire→release and coord acquire→release (or publishes to a scope with many
 * watchers), and where its time goes.
 *
 *   node bench/profile.mjs [--duration=10] [--workload=both|claims|coord|fanout] [--clients=1]
 *                          [--watchers=1000]
 *                          [--sampling-us=100] [--top=5] [--tag=profile] [--help]
 *
 * The server is the serving half of `npm start` (bench/server.mjs) with its
 * `--inspector-port`: workerd's V8 inspector. Over its WebSocket (Chrome DevTools Protocol,
 * the `ws` package) the script sends `Profiler.start` after a warm-up and `Profiler.stop`
 * after `--duration`, writes the profile to bench/results/<tag>.cpuprofile (open it in
 * Chrome DevTools or speedscope) and a summary to bench/results/<tag>.json, and prints each
 * phase's share of the isolate's busy time with its top self-time functions, mapped to the
 * TypeScript sources through the bundle's source map (bench/profile-phases.mjs).
 *
 * Before profiling, the same loop runs as long again with the profiler off, and the workerd
 * process's CPU time (/proc) over it divided by its cycles is the absolute cost per cycle
 * that the phases' shares are applied to. Over that same loop it also reports the CPU per
 * cycle of the Node front and of this load generator (which includes the sampler's own
 * reads, ≈ 500 a second), and how workerd's JavaScript thread spent its wall time — running,
 * blocked on the disk, or idle (bench/thread-states.mjs): a saturated thread has no idle.
 *
 * Guarantees: every reply's status is checked (bench/locks.mjs cycles); the Worker and its
 * Durable Objects share one isolate, so one profile covers the router and the objects;
 * the server is stopped and its temporary state removed on exit, Ctrl-C or the hard limit.
 * Does not: profile the Node front or the load generator (they are other processes), or
 * make figures taken on a loaded machine honest (the load average is printed and saved).
 * Exit status: 0 on success, 1 on a failed measurement, 2 on a usage mistake.
 */
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import WebSocket from "ws";
import { parseOrExit } from "../src/cli/options.mjs";
import { hardLimit, stopAll } from "./cleanup.mjs";
import { makeClient } from "./http.mjs";
import { FANOUT_DELIVERY_TIMEOUT_MS, openFanout } from "./coord-latency.mjs";
import { claimLocks, coordLocks } from "./locks.mjs";
import { PROFILE_USAGE, parseProfileArgs } from "./options.mjs";
import { renderPhases, sourceMapLocator, summarizeProfile } from "./profile-phases.mjs";
import { commitInfo, load1m, machineInfo } from "./report.mjs";
import { buildBundle, freePort, groupCpuSeconds, groupPids, startServer } from "./server.mjs";
import { sampleThreadStates, threadNamed } from "./thread-states.mjs";
import { closedLoop, round } from "./stats.mjs";

const TOKEN = "dev-token";
const WARMUP = { durationMs: 2_000, maxCycles: 300 };

const options = parseOrExit("profile", PROFILE_USAGE, () => parseProfileArgs(process.argv.slice(2)));
hardLimit("profile", 2 * options.durationMs + 5 * 60_000);

/**
 * A minimal Chrome DevTools Protocol session: one request at a time is all this needs.
 * @param {string} url the target's `webSocketDebuggerUrl`
 */
async function devtools(url) {
  const ws = new WebSocket(url);
  await new Promise((resolve, reject) => {
    ws.once("open", resolve);
    ws.once("error", reject);
  });
  let nextId = 1;
  /** @type {Map<number, { resolve: (v: unknown) => void, reject: (e: Error) => void }>} */
  const pending = new Map();
  ws.on("message", (data) => {
    const msg = /** @type {{ id?: number, result?: unknown, error?: { message: string } }} */ (
      // Text frames arrive as one Buffer (no fragmentation on a local socket).
      JSON.parse(Buffer.from(/** @type {Buffer} */ (data)).toString("utf8"))
    );
    const waiter = msg.id === undefined ? undefined : pending.get(msg.id);
    if (waiter === undefined || msg.id === undefined) return;
    pending.delete(msg.id);
    if (msg.error !== undefined) waiter.reject(new Error(msg.error.message));
    else waiter.resolve(msg.result);
  });
  return {
    /**
     * @param {string} method
     * @param {Record<string, unknown>} [params]
     * @returns {Promise<unknown>}
     */
    send(method, params = {}) {
      const id = nextId++;
      ws.send(JSON.stringify({ id, method, params }));
      return new Promise((resolve, reject) => pending.set(id, { resolve, reject }));
    },
    close: () => ws.close(),
  };
}

/**
 * The inspector target of the Worker itself (`core:user:<name>`), not Miniflare's helpers.
 * @param {string} inspectorUrl
 */
async function workerTarget(inspectorUrl) {
  const res = await fetch(`${inspectorUrl}/json`);
  const targets = /** @type {{ id: string, webSocketDebuggerUrl: string }[]} */ (await res.json());
  const target = targets.find((t) => t.id.startsWith("core:user:"));
  if (target === undefined) throw new Error(`no core:user: target among ${targets.map((t) => t.id).join(", ")}`);
  return target.webSocketDebuggerUrl;
}

const machine = machineInfo();
const inspectorPort = await freePort();
const server = await startServer("npm-start", { inspectorPort });
const client = await makeClient(TOKEN);
const ns = `profile-${crypto.randomUUID().slice(0, 8)}`;
const fanoutMode = options.workload === "fanout";
const claims = await claimLocks(client, server.url, ns).open(fanoutMode ? 0 : options.clients);
const coord = await coordLocks(client, server.url, ns, false).open(fanoutMode ? 0 : options.clients);
// One publisher: a publish is the scope's one writer, so --clients does not apply.
const fanout = fanoutMode
  ? await openFanout(
      { url: server.url, client, ns, token: TOKEN, durationMs: 0, maxCycles: 0 },
      options.watchers,
      3 * options.durationMs + 60_000,
    )
  : undefined;
const clients = fanoutMode ? 1 : options.clients;
/** Cycles finished while profiling (warm-up excluded). */
let profiledCycles = 0;
/** @param {string} phase */
const cycleFor = (phase) => async (/** @type {number} */ c, /** @type {number} */ _i, /** @type {number} */ end) => {
  const key = `${phase}-${c}`;
  if (fanout !== undefined) {
    const { arrivals } = await fanout.publish();
    if (arrivals.length !== options.watchers) {
      throw new Error(
        `publish reached ${arrivals.length} of ${options.watchers} watchers within ${FANOUT_DELIVERY_TIMEOUT_MS} ms`,
      );
    }
  } else {
    if (options.workload !== "coord" && (await claims.cycle(c, key, end)) === undefined) return false;
    if (options.workload !== "claims" && (await coord.cycle(c, key, end)) === undefined) return false;
  }
  if (phase === "run") profiledCycles++;
  return true;
};

let exitCode = 0;
try {
  const cdp = await devtools(await workerTarget(`http://127.0.0.1:${inspectorPort}`));
  await cdp.send("Profiler.enable");
  await cdp.send("Profiler.setSamplingInterval", { interval: options.samplingUs });
  // Warm-up: objects created, code compiled, connections open — none of it profiled.
  await closedLoop({ clients, ...WARMUP, cycle: cycleFor("warm") });
  // CPU per cycle is measured with the profiler off: its sampling thread costs CPU per
  // second, not per cycle, and would weigh more the slower the cycles are.
  // Over the same loop: where workerd's JavaScript thread spends its wall time (running,
  // blocked on the disk, idle), and what the front and this load generator cost per cycle.
  const [workerdPid] = groupPids(server.pgid, "workerd");
  const workerdThread = workerdPid === undefined ? undefined : threadNamed(workerdPid, "workerd");
  const states =
    workerdPid === undefined || workerdThread === undefined ? undefined : sampleThreadStates(workerdPid, workerdThread);
  const cpuBefore = groupCpuSeconds(server.pgid);
  const clientCpuBefore = process.cpuUsage();
  const unprofiled = await closedLoop({
    clients,
    durationMs: options.durationMs,
    maxCycles: 10_000_000,
    cycle: cycleFor("cpu"),
  });
  const clientCpu = process.cpuUsage(clientCpuBefore);
  const cpuAfter = groupCpuSeconds(server.pgid);
  const threadStates = states?.stop();
  const workerdCpuSeconds = (cpuAfter["workerd"] ?? 0) - (cpuBefore["workerd"] ?? 0);
  const frontCpuSeconds = (cpuAfter["node"] ?? 0) - (cpuBefore["node"] ?? 0);
  const clientCpuSeconds = (clientCpu.user + clientCpu.system) / 1e6;
  await cdp.send("Profiler.start");
  const loop = await closedLoop({
    clients,
    durationMs: options.durationMs,
    maxCycles: 10_000_000,
    cycle: cycleFor("run"),
  });
  const { profile } = /** @type {{ profile: import("./profile-phases.mjs").CpuProfile }} */ (
    await cdp.send("Profiler.stop")
  );
  cdp.close();

  const bundle = buildBundle();
  const map = /** @type {object} */ (JSON.parse(readFileSync(join(bundle, "index.js.map"), "utf8")));
  const summary = summarizeProfile(profile, sourceMapLocator(map, "index.js"));
  const perCycleUs = (/** @type {number} */ seconds) =>
    unprofiled.cycles === 0 ? 0 : Math.round((seconds * 1e6) / unprofiled.cycles);
  const cpuUsPerCycle = perCycleUs(workerdCpuSeconds);
  const share = (/** @type {number} */ n) => (summary.busy === 0 ? 0 : round((100 * n) / summary.busy, 1));
  const cycle = fanoutMode
    ? `one publish delivered to ${options.watchers} watchers (1 request, ${options.watchers} frames)`
    : options.workload === "both"
      ? "claim acquire→release + coord acquire→release (4 requests)"
      : `${options.workload} acquire→release (2 requests)`;
  const loadAvg1m = load1m();
  mkdirSync("bench/results", { recursive: true });
  const profileFile = `bench/results/${options.tag}.cpuprofile`;
  writeFileSync(profileFile, JSON.stringify(profile));
  const result = {
    command: `npm run bench:profile -- ${process.argv.slice(2).join(" ")}`.replace(/ -- $/, ""),
    commit: commitInfo(),
    machine,
    loadAvg1m,
    client: client.name,
    cycle,
    clients,
    cyclesPerSecond: unprofiled.perSecond,
    cyclesPerSecondProfiled: loop.perSecond,
    cycles: profiledCycles,
    samplingUs: options.samplingUs,
    workerdCpuSeconds: round(workerdCpuSeconds, 2),
    cpuUsPerCycle,
    frontCpuUsPerCycle: perCycleUs(frontCpuSeconds),
    clientCpuUsPerCycle: perCycleUs(clientCpuSeconds),
    // R running or runnable, D blocked on the disk, S idle in the event loop (% of samples).
    workerdThreadStatePercent: threadStates?.percent ?? null,
    busySamples: summary.busy,
    idleSamples: summary.idle,
    phasePercent: Object.fromEntries(Object.entries(summary.phases).map(([k, n]) => [k, share(n)])),
    top: summary.functions.slice(0, 40).map((f) => ({ ...f, percent: share(f.self) })),
  };
  writeFileSync(`bench/results/${options.tag}.json`, `${JSON.stringify(result, null, 2)}\n`);

  console.log(`shiftlock profile — ${machine.nproc} cores, load average ${loadAvg1m}, node ${machine.node}`);
  if (loadAvg1m > machine.nproc) console.log(`warning: load average ${loadAvg1m} > ${machine.nproc} cores`);
  console.log(`cycle: ${cycle}, ${clients} client(s), client ${client.name}`);
  console.log(
    `${unprofiled.perSecond} cycles/s unprofiled (CPU per cycle measured here), ` +
      `${loop.perSecond} cycles/s while profiled (sampling every ${options.samplingUs} µs)\n`,
  );
  console.log(
    `per cycle, unprofiled: workerd CPU ${result.cpuUsPerCycle} µs, Node front (and Miniflare's host) ` +
      `${result.frontCpuUsPerCycle} µs, load generator ${result.clientCpuUsPerCycle} µs`,
  );
  if (threadStates !== undefined) {
    const pct = (/** @type {string} */ s) => threadStates.percent[s] ?? 0;
    console.log(
      `workerd's JavaScript thread (${threadStates.samples} samples): running ${pct("R")} %, ` +
        `blocked on the disk ${pct("D")} %, idle ${pct("S")} %\n`,
    );
  }
  console.log(renderPhases(summary, { top: options.top, cpuUsPerCycle }));
  console.log(`\nprofile: ${profileFile} (Chrome DevTools → Performance → Load profile, or speedscope)`);
} catch (err) {
  console.error(`profile failed: ${err instanceof Error ? err.message : String(err)}`);
  exitCode = 1;
} finally {
  await Promise.all([claims.close(), coord.close(), fanout?.close()]);
  await client.close();
  await server.stop();
  await stopAll();
}
process.exit(exitCode);
