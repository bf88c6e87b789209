#!/usr/bin/env node
/**
 * `npm run bench:cost`: what one operation costs in the units Cloudflare bills — Worker
 * requests, Durable Object requests, SQLite rows read and written, alarms written and fired,
 * WebSocket frames, listing deliveries, and workerd's CPU — for each claims, coord and
 * generation operation, beside the floor (bench/floor/worker.js, whose rows its own SQLite
 * cursors report), priced per million operations with the list prices of
 * bench/scale-model.mjs.
 *
 *   node bench/cost.mjs [--ops=N] [--cpu-ops=N (default 1000)] [--listing-index=on|off] [--write-doc]
 *   TMPDIR=/dev/shm node bench/cost.mjs …   (state on tmpfs: the CPU without the disk's)
 *
 * Two runs of the same operations (one list, {@link operations}), on two servers:
 * - Counts: the serving half of `npm start` with `--object-meter on`
 *   (src/durable/object-meter.ts), never sampled. Each operation runs `--ops` times (default
 *   20), one after the other, each on its own claim, scope or generation; between operations
 *   the run waits until no object has written a meter line for 2.5 s, so the deliveries and
 *   forwards an operation caused are counted with it. Counts are divided by the operations.
 * - CPU: the same startLocalServer() reached on workerd's own socket (bench/direct-server.ts:
 *   no meter, no Node front, no Miniflare entry Worker — the path the floor is reached by),
 *   each operation `--cpu-ops` times (default 1000), each time on its own object left alone
 *   for 12 s first (evicted: {@link EVICTED_IDLE_MS}): workerd's CPU time (its threads'
 *   schedstat, nanoseconds) from the first call until 2.5 s after the last (the listing's
 *   deliveries and forwards included), less what workerd uses idle over as long (measured
 *   just before), divided by the operations. The floor's workerd likewise.
 * - Steady state: on the same CPU server, one claim (and one floor lock) takes the same
 *   operation `--cpu-ops` times in a row — acquire → release, renew, get — so the object
 *   stays in memory and one listing delivery carries many changes: what a held, renewed
 *   claim costs, beside the isolated operations above, each of which pays the start of an
 *   evicted object. Each steady-state row, too, waits until every object touched before it
 *   is evicted, so that no eviction's CPU falls inside its window.
 * `--listing-index off` serves both with npm start's switch of that name (no listing staged or
 * delivered): what an operation costs without the listing, beside the table's figures. The
 * doc's table is always the product's (`--write-doc` refuses `off`).
 * Does not: include storage or duration billing, or make a CPU figure taken on a loaded
 * machine honest (the load average is printed). `--write-doc` rewrites the `cost` section of
 * docs/performance.md. Not part of `npm test`.
 */
import { parseChoice, parseInteger, parseOptions } from "../src/cli/options.mjs";
import { hardLimit, stopAll } from "./cleanup.mjs";
import { startFloor } from "./floor/serve.mjs";
import { expectStatus, makeClient } from "./http.mjs";
import { claimLocks, claimSteps, floorLocks, floorSteps } from "./locks.mjs";
import { commitInfo, describeMachine, load1m, machineInfo, markdownTable, replaceSection } from "./report.mjs";
import { countByPhase, OBJECT_GB, parseMeterLine, PRICES } from "./scale-model.mjs";
import {
  childPids,
  cpuUsPerOp as serverCpuUsPerOp,
  EVICTED_IDLE_MS,
  groupPids,
  startServer,
  untilEvicted,
} from "./server.mjs";
import { round } from "./stats.mjs";

const { values } = parseOptions(process.argv.slice(2), {
  ops: { type: "string" },
  "cpu-ops": { type: "string" },
  "write-doc": { type: "boolean" },
  "listing-index": { type: "string" },
});
const listingIndex = /** @type {"on" | "off"} */ (
  parseChoice("--listing-index", values["listing-index"], ["on", "off"]) ?? "on"
);
if (listingIndex === "off" && values["write-doc"] === true) {
  console.error("bench:cost: the doc's table is taken with the listing on (drop --listing-index off)");
  process.exit(2);
}
const N = parseInteger("--ops", values.ops, { min: 1, max: 1_000 }) ?? 20;
// 1,000: over fewer, workerd's idle CPU (subtracted, but not constant) moves a figure by ±100 µs.
const CPU_N = parseInteger("--cpu-ops", values["cpu-ops"], { min: 1, max: 5_000 }) ?? 1_000;
/** What an operation may still cause after its answer: a coalesced delivery, a shard's forward. */
const SETTLE_MS = 2_500;
/** Every lease's ttl: long enough that no lease alarm fires inside a later measurement. */
const TTL_MS = 600_000;
hardLimit("bench:cost", 30 * 60_000);
const sleep = (/** @type {number} */ ms) => new Promise((r) => setTimeout(r, ms));
const enc = encodeURIComponent;

/**
 * The measured operations, in order, against one server: `run(i)` acts on the i-th claim,
 * scope or generation; later operations use what earlier ones left (tokens, leases).
 * @param {import("./http.mjs").BenchClient} http
 * @param {string} base `${url}/v1/ns/${ns}`
 * @returns {{ name: string, run: (i: number) => Promise<void> }[]}
 */
function operations(http, base) {
  const claim = (/** @type {number} */ i) => `${base}/claims/c-${i}`;
  const claims = claimSteps(http, base, TTL_MS);
  const acquire = async (/** @type {number} */ i) => void (await claims.acquire(`c-${i}`));
  const release = async (/** @type {number} */ i) => void (await claims.release(`c-${i}`));
  const scope = (/** @type {number} */ i) => `${base}/volumes/v/stores/s-${i}/leases`;
  /** @type {string[]} */
  const leases = [];
  const origin = new URL(base).origin;
  return [
    // The request path without an object (the Worker, its router and the answer), then with
    // authentication: what every operation below pays before it reaches its object.
    {
      name: "GET /healthz (Worker only)",
      run: async () => void expectStatus(await http.call("GET", `${origin}/healthz`), 200, "healthz"),
    },
    {
      name: "GET whoami (Worker + auth)",
      run: async () => void expectStatus(await http.call("GET", `${base}/whoami`), 200, "whoami"),
    },
    { name: "claims acquire, new claim", run: acquire },
    {
      name: "claims renew",
      run: async (i) => {
        const body = { generationId: "g", token: claims.token(`c-${i}`), ttlMs: TTL_MS };
        expectStatus(await http.call("POST", `${claim(i)}/renew`, body), 200, "renew");
      },
    },
    { name: "claims get", run: async (i) => void expectStatus(await http.call("GET", claim(i)), 200, "get") },
    { name: "claims release", run: release },
    // The same two on objects that exist (their first acquire created their tables above).
    { name: "claims acquire, existing claim", run: acquire },
    { name: "claims release, again", run: release },
    {
      name: "coord lease acquire",
      run: async (i) => {
        const r = await http.call("POST", scope(i), { participantId: "p", ttlMs: TTL_MS });
        leases[i] = `${scope(i)}/${enc(expectStatus(r, 201, "lease").lease.leaseId)}`;
      },
    },
    {
      name: "coord publish",
      run: async (i) => {
        expectStatus(await http.call("POST", `${leases[i]}/publish`, { root: { i } }), 200, "publish");
      },
    },
    {
      name: "coord lease release",
      run: async (i) => {
        expectStatus(await http.call("DELETE", /** @type {string} */ (leases[i])), 204, "lease release");
      },
    },
    {
      name: "generation register",
      run: async (i) => {
        const body = { id: `gen-${i}`, service: "cost", instanceId: `i-${i}` };
        expectStatus(await http.call("POST", `${base}/generations`, body), 200, "register");
      },
    },
    {
      name: "generation update",
      run: async (i) => {
        const r = await http.call("PATCH", `${base}/generations/gen-${i}`, { state: "standby" });
        expectStatus(r, 200, "update");
      },
    },
  ];
}

/**
 * The floor's operations on lock `l-<i>`, mirroring the claims': an acquire that creates the
 * lock's object, its release, an acquire of an existing lock, its release. Each adds the rows
 * its answer reports to `rows` by name.
 * @param {import("./http.mjs").BenchClient} plain
 * @param {string} url
 * @param {Record<string, { rowsRead: number, rowsWritten: number }>} rows
 */
function floorOperations(plain, url, rows) {
  const locks = floorSteps(plain, url, TTL_MS);
  /** @param {string} name @param {"acquire" | "release"} step */
  const op = (name, step) => ({
    name,
    run: async (/** @type {number} */ i) => {
      const answer = await locks[step](`l-${i}`);
      const reported = /** @type {{ read: number, written: number }} */ (answer["rows"]);
      const t = (rows[name] ??= { rowsRead: 0, rowsWritten: 0 });
      t.rowsRead += reported.read;
      t.rowsWritten += reported.written;
    },
  });
  return [
    op(FLOOR.acquireNew, "acquire"),
    op(FLOOR.release, "release"),
    op(FLOOR.acquire, "acquire"),
    op(FLOOR.releaseAgain, "release"),
  ];
}

/** The floor's steady-state row: acquire → release on one lock, per operation. */
const WARM_FLOOR = "floor acquire → release, one lock";

/** The floor's rows, by the name its table row and CPU figure carry. */
const FLOOR = {
  acquireNew: "floor acquire, new lock",
  release: "floor release",
  acquire: "floor acquire, existing lock",
  releaseAgain: "floor release, again",
};

/** Which floor operation each of ours is compared with: its twin, else one write to an existing lock. */
const FLOOR_TWIN = /** @type {Record<string, string>} */ ({
  "claims acquire, new claim": FLOOR.acquireNew,
  "claims release": FLOOR.release,
  "claims acquire, existing claim": FLOOR.acquire,
  "claims release, again": FLOOR.releaseAgain,
});

// Counts: the metered server.
/** @type {import("./scale-model.mjs").MeterLine[]} */
const lines = [];
const server = await startServer("npm-start", {
  listingIndex,
  serveArgs: "--object-meter on",
  onLine: (line) => {
    const m = parseMeterLine(line);
    if (m !== undefined) lines.push(m);
  },
});
const floor = await startFloor();
const metered = await makeClient("dev-token");
const plain = await makeClient();

/** Until no meter line for `forMs`. */
async function quiet(forMs = SETTLE_MS) {
  let seen = lines.length;
  let since = Date.now();
  for (const until = Date.now() + 60_000; Date.now() < until;) {
    await sleep(200);
    if (lines.length !== seen) [seen, since] = [lines.length, Date.now()];
    else if (Date.now() - since >= forMs) return;
  }
}

/** @type {import("./scale-model.mjs").Phase[]} */
const phases = [];
for (const op of operations(metered, `${server.url}/v1/ns/cost-${crypto.randomUUID().slice(0, 8)}`)) {
  await quiet();
  const startMs = Date.now();
  for (let i = 0; i < N; i++) await op.run(i);
  await quiet();
  phases.push({ name: op.name, startMs, endMs: Date.now() });
  process.stderr.write(`${op.name}: counted\n`);
}
/** @type {Record<string, { rowsRead: number, rowsWritten: number }>} the floor's own row counts */
const floorRows = {};
for (const op of floorOperations(plain, floor.url, floorRows)) for (let i = 0; i < N; i++) await op.run(i);
await metered.close();
await server.stop();

// CPU: workerd's own socket, no meter; the floor's workerd is this process's child.
const direct = await startServer("direct", { listingIndex });
const http = await makeClient("dev-token");
const [serverWorkerd] = groupPids(direct.pgid, "workerd");
const [floorWorkerd] = childPids("workerd");
if (serverWorkerd === undefined || floorWorkerd === undefined) throw new Error("no workerd process found in /proc");

/** workerd's CPU per operation over {@link CPU_N} runs (bench/server.mjs). */
const cpuUsPerOp = (/** @type {number} */ pid, /** @type {(i: number) => Promise<unknown>} */ run) =>
  serverCpuUsPerOp(pid, run, CPU_N, SETTLE_MS);
/** The same, each operation on an object the runtime has evicted. */
const evictedCpuUsPerOp = async (/** @type {number} */ pid, /** @type {(i: number) => Promise<unknown>} */ run) => {
  await untilEvicted();
  return cpuUsPerOp(pid, run);
};
/** @type {Map<string, number>} operation → workerd µs */
const cpuUs = new Map();
// The floor first; its warm-up compiles its code on other locks.
for (const op of floorOperations(plain, floor.url, {})) for (let i = 0; i < 20; i++) await op.run(10_000 + i);
const floorOps = floorOperations(plain, floor.url, {});
for (const op of floorOps) {
  cpuUs.set(op.name, await evictedCpuUsPerOp(floorWorkerd, (i) => op.run(20_000 + i)));
  process.stderr.write(`${op.name}: ${cpuUs.get(op.name)} µs of workerd CPU\n`);
}
// What the start costs: the floor's acquire of the same locks again while they are in memory
// (their last release ended ≈ 8 s before, under the runtime's 10 s).
const floorAcquire = floorOps.find((op) => op.name === FLOOR.acquire);
if (floorAcquire === undefined) throw new Error(`no floor operation named ${FLOOR.acquire}`);
const floorInMemoryUs = await cpuUsPerOp(floorWorkerd, (i) => floorAcquire.run(20_000 + i));
process.stderr.write(`floor acquire, existing lock, in memory: ${floorInMemoryUs} µs of workerd CPU\n`);
/**
 * The steady state beside the isolated operations above: one object, the same operation
 * `--cpu-ops` times in a row, so the object stays in memory and one delivery carries many
 * changes to the listing. `perOp` divides a cycle of several requests.
 * @type {{ name: string, floor: string, perOp: number, setup?: () => Promise<void>, run: () => Promise<void> }[]}
 */
const warm = [];
/** @type {Map<string, number>} warm row → workerd µs per operation */
const warmCpuUs = new Map();
{
  // The acquire → release cycle of bench:peers (bench/locks.mjs), on one lock.
  const floorLock = await floorLocks(plain, floor.url).open(1);
  const floorCycle = () => floorLock.cycle(0, "warm", Infinity);
  await untilEvicted();
  for (let i = 0; i < 20; i++) await floorCycle();
  warmCpuUs.set(WARM_FLOOR, round((await cpuUsPerOp(floorWorkerd, floorCycle)) / 2, 0));
}
await plain.close();
const cpuNs = `cpu-${crypto.randomUUID().slice(0, 8)}`;
// Warm-up (code compiled, connections open) on other names, then the measured runs.
for (const op of operations(http, `${direct.url}/v1/ns/warm-${cpuNs}`)) for (let i = 0; i < 20; i++) await op.run(i);
for (const op of operations(http, `${direct.url}/v1/ns/${cpuNs}`)) {
  cpuUs.set(op.name, await evictedCpuUsPerOp(serverWorkerd, op.run));
  process.stderr.write(`${op.name}: ${cpuUs.get(op.name)} µs of workerd CPU\n`);
}
{
  const claim = `${direct.url}/v1/ns/${cpuNs}/claims/warm`;
  /** @type {string} */
  let token = "";
  const acquire = async () => {
    const r = await http.call("POST", `${claim}/acquire`, { generationId: "g", ttlMs: TTL_MS });
    token = expectStatus(r, 200, "acquire").claim.fencingToken;
  };
  const claimLock = await claimLocks(http, direct.url, cpuNs).open(1);
  warm.push(
    {
      name: "claims acquire → release, one claim",
      floor: WARM_FLOOR,
      perOp: 2,
      // The acquire → release cycle of bench:peers (bench/locks.mjs).
      run: async () => void (await claimLock.cycle(0, "warm", Infinity)),
    },
    {
      name: "claims renew, one held claim",
      floor: WARM_FLOOR,
      perOp: 1,
      setup: acquire,
      run: async () => {
        const body = { generationId: "g", token, ttlMs: TTL_MS };
        expectStatus(await http.call("POST", `${claim}/renew`, body), 200, "renew");
      },
    },
    {
      name: "claims get, one claim",
      floor: WARM_FLOOR,
      perOp: 1,
      run: async () => void expectStatus(await http.call("GET", claim), 200, "get"),
    },
  );
  for (const w of warm) {
    await untilEvicted();
    await w.setup?.();
    for (let i = 0; i < 20; i++) await w.run();
    warmCpuUs.set(w.name, round((await cpuUsPerOp(serverWorkerd, w.run)) / w.perOp, 0));
    process.stderr.write(`${w.name}: ${warmCpuUs.get(w.name)} µs of workerd CPU per operation\n`);
  }
}
const load = load1m();
await http.close();
await stopAll();

/**
 * List price per million operations: the Worker request, object requests, rows (an alarm
 * write priced as one row written), workerd's CPU as Worker CPU time, and the objects'
 * active duration at 128 MB. Storage not included.
 * @param {{ objectRequests: number, rowsRead: number, rowsWritten: number, alarmsSet: number, cpuUs: number, busyMs: number }} c per operation
 */
const usdPerM = (c) =>
  round(
    PRICES.workerRequestsPerM +
      c.objectRequests * PRICES.objectRequestsPerM +
      c.rowsRead * PRICES.rowsReadPerM +
      (c.rowsWritten + c.alarmsSet) * PRICES.rowsWrittenPerM +
      (c.cpuUs / 1_000) * PRICES.workerCpuPerMCpuMs +
      (c.busyMs / 1_000) * OBJECT_GB * PRICES.durationPerMGbS,
    3,
  );
const floorCpu = (/** @type {string} */ name) => cpuUs.get(FLOOR_TWIN[name] ?? FLOOR.acquire) ?? NaN;
const counted = countByPhase(lines, phases);
const rows = phases.map((p) => {
  const objects = [...(counted.get(p.name)?.values() ?? [])];
  const sum = (
    /** @type {"requests" | "alarms" | "alarmsSet" | "rowsRead" | "rowsWritten" | "frames" | "deliveries" | "busyMs"} */ k,
  ) => round(objects.reduce((a, c) => a + c[k], 0) / N, 2);
  const cpu = cpuUs.get(p.name) ?? NaN;
  const c = {
    objectRequests: sum("requests"),
    rowsRead: sum("rowsRead"),
    rowsWritten: sum("rowsWritten"),
    alarmsSet: sum("alarmsSet"),
    cpuUs: cpu,
    busyMs: sum("busyMs"),
  };
  return [
    p.name,
    1,
    c.objectRequests,
    c.rowsRead,
    c.rowsWritten,
    c.alarmsSet,
    sum("alarms"),
    sum("frames"),
    sum("deliveries"),
    cpu,
    `${round(cpu / floorCpu(p.name), 2)}×`,
    usdPerM(c),
  ];
});
for (const [name, t] of Object.entries(floorRows)) {
  const cpu = cpuUs.get(name) ?? NaN;
  const c = { objectRequests: 1, rowsRead: round(t.rowsRead / N, 2), rowsWritten: round(t.rowsWritten / N, 2) };
  const price = usdPerM({ ...c, alarmsSet: 0, cpuUs: cpu, busyMs: 0 });
  rows.push([name, 1, 1, c.rowsRead, c.rowsWritten, 0, 0, 0, 0, cpu, "1×", price]);
}
const table = markdownTable(
  [
    "operation",
    "Worker requests",
    "object requests",
    "rows read",
    "rows written",
    "alarms written",
    "alarms fired",
    "frames",
    "index deliveries",
    "workerd CPU µs",
    "CPU ÷ floor",
    "USD per million ops",
  ],
  rows,
  "lrrrrrrrrrrr",
);
const floorWarm = warmCpuUs.get(WARM_FLOOR) ?? NaN;
const warmTable = markdownTable(
  ["one object, the same operation repeated", "workerd CPU µs per operation", "CPU ÷ floor"],
  [
    ...warm.map((w) => {
      const cpu = warmCpuUs.get(w.name) ?? NaN;
      return [w.name, cpu, `${round(cpu / floorWarm, 2)}×`];
    }),
    [WARM_FLOOR, floorWarm, "1×"],
  ],
  "lrr",
);
const command = `npm run bench:cost -- ${process.argv.slice(2).join(" ")}`.replace(/ -- $/, "");
const machine = machineInfo();
const section = [
  `Command: \`${command}\` at commit ${commitInfo()} (${new Date().toISOString()}); ${N} operations each for the counts, ${CPU_N} for the CPU; machine: ${describeMachine(machine)}; load at the end ${load}. Counts do not depend on load; CPU does.`,
  "",
  `Every operation of the first table, ours and the floor's, runs on an object left alone for ${EVICTED_IDLE_MS / 1_000} s, which the local runtime has evicted: each pays the object's start. The floor's acquire of an existing lock still in memory: ${floorInMemoryUs} µs (evicted: ${cpuUs.get(FLOOR.acquire)}).`,
  "",
  table,
  "",
  warmTable,
].join("\n");
console.log(`\n${section}`);
if (values["write-doc"] === true) {
  replaceSection("docs/performance.md", "<!-- cost:begin -->", "<!-- cost:end -->", section);
  console.log("rewrote the cost section of docs/performance.md");
}
process.exit(0);
