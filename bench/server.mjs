/**
 * Start shiftlock for a benchmark the way users run it, on a free loopback port with a fresh
 * state directory, measure its memory, and stop it.
 *
 * `npm start` is "build, then serve" (package.json): `npm run build` writes the
 * `wrangler deploy --dry-run` bundle, then the serving half (the part of the `start` script
 * after its last ` && `, as test/e2e/server.ts takes it) serves it through workerd behind the
 * Node front. Here the build runs once per benchmark process — the `build` script with its
 * `--outdir` pointed at a private temporary directory, so a run never rewrites the checkout's
 * `dist/` under someone else's test — and each server is the serving half with
 * `--port P --persist-to DIR --bundle THAT_DIR` appended.
 *
 * Kinds: `npm-start` is that server (clients talk to the Node front); `direct` runs
 * bench/direct-server.ts, the same `startLocalServer()` in the same kind of process, and
 * hands out its `directUrl` (workerd's own socket, no front): the difference between the
 * two is what the front costs.
 *
 * Guarantees: every server leads its own process group (the shell, node and workerd);
 * `rss()` sums the resident memory of every process in it; `stop()` sends SIGTERM to the
 * group, waits until no process of it is left (SIGKILL after 10 s) and removes the state
 * directory; a server that fails to start leaves nothing behind; Ctrl-C and the hard limit
 * stop it too (bench/cleanup.mjs). Does not guarantee the port stays free between probing
 * and binding (a clash fails the start, loudly).
 */
import { execSync, spawn } from "node:child_process";
import { closeSync, mkdtempSync, openSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { delimiter, join, resolve } from "node:path";
import { track, trackDir } from "./cleanup.mjs";

/** @returns {Promise<number>} a port that was free on 127.0.0.1 a moment ago */
export async function freePort() {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const address = srv.address();
      const port = typeof address === "object" && address !== null ? address.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

/** @returns {Record<string, string>} the scripts of package.json */
function scripts() {
  const pkg = /** @type {{ scripts?: Record<string, string> }} */ (JSON.parse(readFileSync("package.json", "utf8")));
  return pkg.scripts ?? {};
}

/**
 * The serving half of `npm start` with its port, state and bundle directories set.
 * @param {number} port
 * @param {string} stateDir
 * @param {string} bundleDir
 */
export function serveCommand(port, stateDir, bundleDir) {
  const serve = scripts()["start"]?.split(" && ").at(-1);
  if (serve === undefined) throw new Error("package.json has no start script");
  return `${serve} --port ${port} --persist-to ${stateDir} --bundle ${bundleDir}`;
}

/** Environment for the scripts, as `npm run` gives them: node_modules/.bin on PATH. */
function scriptEnv() {
  const bin = resolve("node_modules/.bin");
  return {
    ...process.env,
    PATH: `${bin}${delimiter}${process.env["PATH"] ?? ""}`,
    WRANGLER_SEND_METRICS: "false",
    NO_COLOR: "1",
  };
}

/** @type {string | undefined} */
let bundleDir;

/**
 * Build the bundle once per process: see {@link buildBundleIn}, run in the checkout.
 * @returns {string} the directory holding index.js
 */
export function buildBundle() {
  bundleDir ??= buildBundleIn(".");
  return bundleDir;
}

/**
 * The `build` script (`npm run build`) run in `sourceDir` (the checkout, or a copy of its
 * sources) with its `--outdir` replaced by a private temporary directory, removed at the end
 * of the run.
 * @param {string} sourceDir
 * @returns {string} the directory holding index.js
 */
export function buildBundleIn(sourceDir) {
  const build = scripts()["build"];
  if (build === undefined || !/--outdir[ =]\S+/.test(build)) {
    throw new Error('package.json\'s "build" script has no --outdir to redirect');
  }
  const dir = mkdtempSync(join(tmpdir(), "shiftlock-bench-dist-"));
  trackDir(dir);
  execSync(build.replace(/--outdir[ =]\S+/, `--outdir ${dir}`), { cwd: sourceDir, stdio: "ignore", env: scriptEnv() });
  return dir;
}

/**
 * Resident memory of every process in a process group, in MB, in total and by program name
 * (`node` is the front and Miniflare's host, `workerd` the runtime, `sh` the shell).
 * @param {number} pgid
 * @returns {{ totalMb: number, byProgram: Record<string, number> }} zeros when /proc is unavailable
 */
export function groupMemory(pgid) {
  /** @type {Record<string, number>} */
  const kb = {};
  let entries;
  try {
    entries = readdirSync("/proc");
  } catch {
    return { totalMb: 0, byProgram: {} };
  }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      // Fields after "(comm)": state ppid pgrp ...; comm may contain spaces.
      const comm = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
      const rest = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (Number(rest[2]) !== pgid) continue;
      const status = readFileSync(`/proc/${entry}/status`, "utf8");
      const match = /VmRSS:\s+(\d+)\s+kB/.exec(status);
      if (match) kb[comm] = (kb[comm] ?? 0) + Number(match[1]);
    } catch {
      // the process exited while we looked
    }
  }
  const total = Object.values(kb).reduce((a, b) => a + b, 0);
  return {
    totalMb: Math.round(total / 1024),
    byProgram: Object.fromEntries(Object.entries(kb).map(([k, v]) => [k, Math.round(v / 1024)])),
  };
}

/** Kernel clock ticks per second (`getconf CLK_TCK`), the unit of /proc/PID/stat's times. */
const CLOCK_TICKS_PER_SECOND = 100;

/**
 * CPU time (user + system) used so far by each program of a process group, in seconds:
 * `workerd` is the Worker's runtime, `node` the front and Miniflare's host.
 * @param {number} pgid
 * @returns {Record<string, number>} empty when /proc is unavailable
 */
export function groupCpuSeconds(pgid) {
  /** @type {Record<string, number>} */
  const seconds = {};
  for (const { comm, rest } of groupStats(pgid)) {
    // After "(comm) ": state(0) ppid(1) pgrp(2) … utime(11) stime(12).
    const ticks = Number(rest[11]) + Number(rest[12]);
    seconds[comm] = (seconds[comm] ?? 0) + ticks / CLOCK_TICKS_PER_SECOND;
  }
  return seconds;
}

/**
 * CPU time a process has used so far, in nanoseconds: the sum over its threads of
 * /proc/PID/task/TID/schedstat's first field (time on a CPU, nanosecond resolution, unlike
 * /proc/PID/stat's 10 ms ticks). 0 when /proc is unavailable.
 * @param {number} pid
 */
export function processCpuNs(pid) {
  let total = 0;
  try {
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      try {
        total += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, "utf8").split(" ")[0]);
      } catch {
        // the thread exited while we looked
      }
    }
  } catch {
    return 0;
  }
  return total;
}

/**
 * A process's CPU per operation, µs (e.g. workerd's): `run(i)` for i < `ops`, from the first
 * call until `settleMs` after the last (so what the operations caused afterwards — a listing
 * delivery, an alarm — counts with them), less what the process used idle over as long,
 * measured over `settleMs` just before.
 * @param {number} pid
 * @param {(i: number) => Promise<unknown>} run its result is ignored
 * @param {number} ops
 * @param {number} settleMs
 */
export async function cpuUsPerOp(pid, run, ops, settleMs) {
  const sleep = (/** @type {number} */ ms) => new Promise((r) => setTimeout(r, ms));
  await sleep(settleMs);
  const idleStart = { ms: performance.now(), ns: processCpuNs(pid) };
  await sleep(settleMs);
  const idleNsPerMs = (processCpuNs(pid) - idleStart.ns) / (performance.now() - idleStart.ms);
  const start = { ms: performance.now(), ns: processCpuNs(pid) };
  for (let i = 0; i < ops; i++) await run(i);
  await sleep(settleMs);
  const usedNs = processCpuNs(pid) - start.ns - idleNsPerMs * (performance.now() - start.ms);
  return Math.max(0, Math.round(usedNs / 1_000 / ops));
}

/**
 * Longer than the local runtime leaves an idle object in memory (10 s: the floor's acquire of
 * an existing lock, 2026-12-03, costs 530–600 µs of workerd CPU after 2–9 s idle and
 * 920–1,380 µs after 10–30 s). A CPU figure of isolated operations waits this long first
 * ({@link untilEvicted}), on every server alike, so each of its operations pays an object's
 * start, and no object touched before is evicted (at a CPU cost) inside its window.
 */
export const EVICTED_IDLE_MS = 12_000;

/** Wait until every object touched so far has been evicted ({@link EVICTED_IDLE_MS}). */
export const untilEvicted = () => new Promise((r) => setTimeout(r, EVICTED_IDLE_MS));

/**
 * The process ids of this process's children named `comm` (e.g. the `workerd` that an
 * in-process Miniflare started).
 * @param {string} comm
 * @returns {number[]}
 */
export function childPids(comm) {
  return procStats()
    .filter((p) => p.comm === comm && Number(p.rest[1]) === process.pid)
    .map((p) => p.pid);
}

/**
 * The process ids of a group's program `comm` (e.g. `workerd`).
 * @param {number} pgid
 * @param {string} comm
 * @returns {number[]}
 */
export function groupPids(pgid, comm) {
  return groupStats(pgid)
    .filter((p) => p.comm === comm)
    .map((p) => p.pid);
}

/**
 * Every live process of group `pgid` with its /proc/PID/stat fields after "(comm) ".
 * @param {number} pgid
 * @returns {{ pid: number, comm: string, rest: string[] }[]} empty when /proc is unavailable
 */
function groupStats(pgid) {
  return procStats().filter((p) => Number(p.rest[2]) === pgid);
}

/**
 * Every live process with its /proc/PID/stat fields after "(comm) ": state(0) ppid(1) pgrp(2) ….
 * @returns {{ pid: number, comm: string, rest: string[] }[]} empty when /proc is unavailable
 */
function procStats() {
  let entries;
  try {
    entries = readdirSync("/proc");
  } catch {
    return [];
  }
  const found = [];
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      const comm = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
      const rest = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      found.push({ pid: Number(entry), comm, rest });
    } catch {
      // the process exited while we looked
    }
  }
  return found;
}

/** True while any process of group `pgid` exists. */
function groupAlive(/** @type {number} */ pgid) {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}

/** @param {number} pgid @param {NodeJS.Signals} signal */
function signalGroup(pgid, signal) {
  try {
    process.kill(-pgid, signal);
  } catch {
    // already gone
  }
}

/**
 * SIGTERM to a process group; resolves once none of it is left (SIGKILL after `graceMs`).
 * @param {number} pgid
 * @param {number} [graceMs]
 */
export async function stopGroup(pgid, graceMs = 10_000) {
  signalGroup(pgid, "SIGTERM");
  const deadline = performance.now() + graceMs;
  while (groupAlive(pgid)) {
    if (performance.now() > deadline) signalGroup(pgid, "SIGKILL");
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * @typedef {object} RunningServer
 * @property {string} url base URL clients use, e.g. http://127.0.0.1:40123
 * @property {import("./options.mjs").ServerKind} kind
 * @property {string} description one line for the results
 * @property {number} pgid process group of every process of the server
 * @property {() => number} rssMb resident memory of the whole group, MB
 * @property {() => ReturnType<typeof groupMemory>} memory the same, by program
 * @property {() => Promise<void>} stop
 */

/** How each kind is described in the results. */
export const SERVER_DESCRIPTIONS = {
  "npm-start":
    "the serving half of `npm start` (workerd via Miniflare's API behind the Node front), fresh state directory",
  direct:
    "diagnostic: the same startLocalServer() reached on workerd's own socket (`directUrl`, no Node front); NOT what clients of `npm start` reach",
};

/**
 * Start a server of `kind` on a free port with a fresh temporary state directory.
 * @param {import("./options.mjs").ServerKind} [kind]
 * @param {{ inspectorPort?: number, listingIndex?: "on" | "off", serveArgs?: string, bundle?: string, onLine?: (line: string) => void }} [extra]
 *   `bundle`: serve this bundle directory instead of building the checkout's;
 *   `listingIndex`: npm start's `--listing-index`; `inspectorPort`: also open workerd's V8
 *   inspector there (`npm start`'s `--inspector-port`; npm-start only); `serveArgs`: more
 *   options for the serving half; `onLine`: called with every line the server prints
 * @returns {Promise<RunningServer>}
 */
export async function startServer(kind = "npm-start", extra = {}) {
  const bundle = extra.bundle ?? buildBundle();
  if (kind === "direct" && extra.inspectorPort !== undefined) throw new Error("the inspector needs --server=npm-start");
  const stateDir = mkdtempSync(join(tmpdir(), "shiftlock-bench-state-"));
  const port = await freePort();
  const inspector =
    (extra.inspectorPort === undefined ? "" : ` --inspector-port ${extra.inspectorPort}`) +
    (extra.listingIndex === undefined ? "" : ` --listing-index ${extra.listingIndex}`) +
    (extra.serveArgs === undefined ? "" : ` ${extra.serveArgs}`);
  const command =
    kind === "direct"
      ? `node --import tsx bench/direct-server.ts --persist-to ${stateDir} --bundle ${bundle}` +
        (extra.listingIndex === undefined ? "" : ` --listing-index ${extra.listingIndex}`)
      : `${serveCommand(port, stateDir, bundle)}${inspector}`;
  // Unless a caller reads the lines, what the server prints goes to a file, not through this
  // process: the measuring process must not be woken by every log line its own load causes
  // (one per mutation), which a user's client never is.
  const outputPath = join(stateDir, "server-output.log");
  const outputFd = extra.onLine === undefined ? openSync(outputPath, "a") : undefined;
  const stdio = outputFd === undefined ? "pipe" : outputFd;
  const child = spawn(command, { shell: true, detached: true, stdio: ["ignore", stdio, stdio], env: scriptEnv() });
  if (outputFd !== undefined) closeSync(outputFd);
  // Detached, so the child leads its own process group: its pid is the group id.
  const pgid = child.pid;
  if (pgid === undefined) {
    rmSync(stateDir, { recursive: true, force: true });
    throw new Error(`could not start the server: ${command}`);
  }
  let stopped = false;
  const stopNow = async () => {
    if (stopped) return;
    stopped = true;
    await stopGroup(pgid);
    rmSync(stateDir, { recursive: true, force: true });
  };
  const untrack = track({
    name: `server (process group ${pgid})`,
    stop: stopNow,
    kill: () => {
      signalGroup(pgid, "SIGKILL");
      rmSync(stateDir, { recursive: true, force: true });
    },
  });
  let piped = "";
  // The tail of what it printed: from the file, or kept from the pipe when lines are read.
  const output = () => (outputFd === undefined ? piped : tail(outputPath));
  const onLine = extra.onLine;
  if (onLine !== undefined) {
    const keep = (/** @type {string} */ text) => (piped = (piped + text).slice(-20_000));
    let partial = "";
    child.stdout?.on("data", (/** @type {Buffer} */ d) => {
      const text = d.toString("utf8");
      keep(text);
      const lines = (partial + text).split("\n");
      partial = lines.pop() ?? "";
      for (const line of lines) onLine(line);
    });
    child.stderr?.on("data", (/** @type {Buffer} */ d) => keep(d.toString("utf8")));
  }
  let url = kind === "direct" ? undefined : `http://127.0.0.1:${port}`;
  const deadline = performance.now() + 60_000;
  for (;;) {
    if (url === undefined) url = /^READY (\S+)$/m.exec(output())?.[1];
    if (url !== undefined && (await healthy(url))) break;
    if (child.exitCode !== null || performance.now() > deadline) {
      const printed = output();
      await untrack();
      throw new Error(`server did not start (exit ${child.exitCode}): ${command}\n${printed}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    url,
    kind,
    description: SERVER_DESCRIPTIONS[kind],
    pgid,
    rssMb: () => groupMemory(pgid).totalMb,
    memory: () => groupMemory(pgid),
    stop: untrack,
  };
}

/** @param {string} path @returns {string} the last 20,000 characters of the file, or "" */
function tail(path) {
  try {
    return readFileSync(path, "utf8").slice(-20_000);
  } catch {
    return "";
  }
}

/** @param {string} url */
async function healthy(url) {
  try {
    const res = await fetch(`${url}/healthz`);
    await res.arrayBuffer();
    return res.ok;
  } catch {
    return false;
  }
}
