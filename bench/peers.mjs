#!/usr/bin/env node
/**
 * `npm run bench:peers`: the same closed-loop acquire→release lock workload against etcd,
 * Redis, shiftlock claims and shiftlock coord leases, in one invocation, on loopback, plus
 * the no-op ceiling (`GET /healthz`) of the same shiftlock server; prints one table and the
 * ratios the "Fast" issue sets targets for.
 *
 *   node bench/peers.mjs [--duration=10] [--server=npm-start|direct] [--rtt-ms=MS] [--tag=peers] [--write-doc]
 *
 * Workloads (bench/locks.mjs says how each system takes a lock): 1 client and 32 clients on
 * distinct keys, and 32 clients on one key (etcd, Redis and claims retry at once when they
 * lose; coord waits in its FIFO queue with `waitMs`). Each figure is a closed loop of
 * `--duration` seconds after a 1.5 s warm-up; figures of one workload are taken one system
 * after the other, so load from elsewhere falls on all of them alike.
 *
 * The peers (bench/peer-servers.mjs) are started privately: etcd as shipped (fsync per
 * commit), Redis as shipped plus `appendonly yes` (fsync every second), both on free
 * loopback ports with data in temporary directories. Without etcd, etcdctl and redis-server
 * on PATH it says how to install them and measures shiftlock alone. shiftlock is the
 * serving half of `npm start` (one server for the whole run, as each peer is one process).
 * The floor (bench/floor/: one SQLite Durable Object per lock, what a Workers user would
 * write instead) is served by the same Miniflare and workerd on workerd's own socket; etcd is
 * measured with a session per lock and with one session per client reused across locks.
 *
 * `--rtt-ms=MS` puts every client of every system behind its own WAN relay
 * (bench/wan-relay.mjs) adding that round trip less what a no-op already takes on loopback
 * (shiftlock and the floor: an HTTP request answered by the Worker; etcd `GET /health`;
 * Redis `PING`); the run refuses to measure when any relay's no-op median is more than 2 ms
 * off, and reports each cycle's p50 in that system's measured RTTs.
 *
 * Guarantees: every loop is bounded by time and count and the run by a hard limit of 20 min;
 * everything started is stopped and every temporary directory removed at the end, on
 * Ctrl-C and at the limit (bench/cleanup.mjs); after the run etcdctl confirms no lock key
 * was left behind. Results go to bench/results/<tag>.json; `--write-doc` rewrites the
 * `peers` section of docs/BENCHMARKS.md. Not part of `npm test`; needs no network.
 * Exit status: 0 when every measurement succeeded, 1 otherwise.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { parseOrExit } from "../src/cli/options.mjs";
import { hardLimit, stopAll } from "./cleanup.mjs";
import { expectStatus, makeClient } from "./http.mjs";
import { claimLocks, coordLocks, etcdLocks, measureLocks, redisLocks } from "./locks.mjs";
import { PEERS_USAGE, parsePeersArgs } from "./options.mjs";
import { etcdKeysLeft, INSTALL_HINT, missingPeers, startEtcd, startRedis } from "./peer-servers.mjs";
import { commitInfo, describeMachine, load1m, machineInfo, markdownTable, writeDocSection } from "./report.mjs";
import { startServer } from "./server.mjs";
import { closedLoop, round } from "./stats.mjs";
import { startFloor } from "./floor/serve.mjs";
import { floorLocks } from "./locks.mjs";
import { calibratedRelay } from "./wan-relay.mjs";
import { RedisClient } from "./redis-client.mjs";

const TOKEN = "dev-token";
const options = parseOrExit("bench:peers", PEERS_USAGE, () => parsePeersArgs(process.argv.slice(2)));
hardLimit("bench:peers", 20 * 60_000);

const startedAt = new Date().toISOString();
const machine = machineInfo();
const missing = missingPeers();
console.log(
  `shiftlock bench:peers — ${machine.nproc} cores (${machine.cpu}), ${machine.memoryGiB} GiB, node ${machine.node}; ` +
    `state in ${machine.stateDir} (fsync of 4 KiB: ${machine.fsyncMsPer4KiB} ms); load ${machine.loadAvg1mAtStart}`,
);
if (missing.length > 0) {
  console.log(
    `\n${missing.join(", ")} not on PATH: measuring shiftlock alone. To compare with the peers, install them:`,
  );
  console.log(`  ${INSTALL_HINT}\n`);
}

const server = await startServer(options.server);
const http = await makeClient(TOKEN);
const plain = await makeClient();
const etcd = missing.length === 0 ? await startEtcd() : undefined;
const redis = missing.length === 0 ? await startRedis() : undefined;
const floor = await startFloor();
const ns = `peers-${crypto.randomUUID().slice(0, 8)}`;

/**
 * Where clients reach each system: itself, or its WAN relay, with the RTT measured through
 * it. A relay that is more than 2 ms off stops the run before anything is measured.
 * @type {Record<"shiftlock" | "floor" | "etcd" | "redis", { url: string, port: number, rttMs?: number }>}
 */
const reach = {
  shiftlock: { url: server.url, port: Number(new URL(server.url).port) },
  floor: { url: floor.url, port: Number(new URL(floor.url).port) },
  etcd: { url: etcd?.address ?? "", port: etcd?.port ?? 0 },
  redis: { url: "", port: redis?.port ?? 0 },
};
if (options.rttMs !== undefined) {
  const wanted = options.rttMs;
  /** @param {"shiftlock" | "floor" | "etcd"} name @param {string} path */
  const httpNoop = (name, path) => (/** @type {number} */ port) => () =>
    (name === "shiftlock" ? http : plain).call("GET", `http://127.0.0.1:${port}${path}`);
  /** @type {[keyof typeof reach, (port: number) => () => Promise<unknown>][]} */
  const noops = [
    ["shiftlock", httpNoop("shiftlock", "/healthz")],
    ["floor", httpNoop("floor", "/")],
  ];
  if (etcd) noops.push(["etcd", httpNoop("etcd", "/health")]);
  /** @type {RedisClient[]} */
  const redisConns = [];
  if (redis) {
    noops.push([
      "redis",
      (port) => {
        const conn = RedisClient.connect(port).then((c) => (redisConns.push(c), c));
        return async () => (await conn).command("PING");
      },
    ]);
  }
  for (const [name, noop] of noops) {
    const target = reach[name];
    const { relay, check } = await calibratedRelay({ targetPort: target.port, rttMs: wanted, noop });
    console.log(`${name}: ${check.message}`);
    if (!check.ok) {
      await stopAll();
      process.exit(1);
    }
    reach[name] = {
      url: target.url === "" ? "" : relay.rewrite(target.url),
      port: relay.port,
      rttMs: check.rttMs,
    };
  }
  for (const c of redisConns) c.close();
}

/** @type {(import("./locks.mjs").LockSystem & { rttMs?: number | undefined })[]} */
const peers = [];
if (etcd) {
  for (const reused of [false, true]) {
    peers.push({ ...etcdLocks(plain, reach.etcd.url, etcd.version, reused), rttMs: reach.etcd.rttMs });
  }
}
if (redis) peers.push({ ...redisLocks(reach.redis.port, redis.version), rttMs: reach.redis.rttMs });
peers.push({ ...floorLocks(plain, reach.floor.url), rttMs: reach.floor.rttMs });

/**
 * @typedef {object} Row
 * @property {string} system
 * @property {string} workload
 * @property {number} clients
 * @property {string} [error]
 * @property {number} [perSecond] cycles per second
 * @property {number} [requestsPerSecond]
 * @property {number} [p50]
 * @property {number} [p99]
 * @property {number} [attemptsPerCycle]
 * @property {number} [rttMs] the WAN relay's measured RTT for this system
 * @property {number} [p50Rtts] p50 of a cycle in those RTTs
 * @property {number} loadAvg1m
 */
/** @type {Row[]} */
const rows = [];

/**
 * @param {string} system
 * @param {string} workload
 * @param {number} clients
 * @param {() => Promise<{ perSecond: number, requestsPerSecond: number, latency: import("./stats.mjs").Summary, attemptsPerCycle?: number }>} fn
 * @param {number} [rttMs] the system's RTT through the relay
 */
async function measure(system, workload, clients, fn, rttMs) {
  process.stdout.write(`${`${system}, ${workload}`.padEnd(58)} `);
  /** @type {Row} */
  let row;
  try {
    const r = await fn();
    row = {
      system,
      workload,
      clients,
      perSecond: r.perSecond,
      requestsPerSecond: r.requestsPerSecond,
      p50: r.latency.p50,
      p99: r.latency.p99,
      ...(r.attemptsPerCycle === undefined ? {} : { attemptsPerCycle: r.attemptsPerCycle }),
      ...(rttMs === undefined ? {} : { rttMs, p50Rtts: round(r.latency.p50 / rttMs) }),
      loadAvg1m: load1m(),
    };
    const tries = row.attemptsPerCycle === undefined ? "" : `, ${row.attemptsPerCycle} attempts/cycle`;
    const rtts = row.p50Rtts === undefined ? "" : ` (p50 ${row.p50Rtts} RTT of ${rttMs} ms)`;
    console.log(`${r.perSecond} cycles/s, p50 ${r.latency.p50} ms, p99 ${r.latency.p99} ms${tries}${rtts}`);
  } catch (err) {
    const error = err instanceof Error ? (err.message.split("\n")[0] ?? "") : String(err);
    row = { system, workload, clients, error, loadAvg1m: load1m() };
    console.log(`FAILED: ${error}`);
  }
  rows.push(row);
  return row;
}

const durationMs = options.durationMs;
for (const clients of [1, 32]) {
  await measure(
    "no-op GET /healthz (same server)",
    `${clients} client(s)`,
    clients,
    async () => {
      const cycle = async () => {
        expectStatus(await http.call("GET", `${reach.shiftlock.url}/healthz`), 200, "healthz");
      };
      await closedLoop({ clients, durationMs: 1_500, maxCycles: 200, cycle });
      const r = await closedLoop({ clients, durationMs, maxCycles: 1_000_000, cycle });
      return { ...r, requestsPerSecond: r.perSecond };
    },
    reach.shiftlock.rttMs,
  );
}
const workloads = [
  { name: "1 client", clients: 1, oneKey: false },
  { name: "32 clients, 32 keys", clients: 32, oneKey: false },
  { name: "32 clients, one key", clients: 32, oneKey: true },
];
let m = 0;
for (const w of workloads) {
  const ours = { rttMs: reach.shiftlock.rttMs };
  const systems = [
    ...peers,
    { ...claimLocks(http, reach.shiftlock.url, ns), ...ours },
    { ...coordLocks(http, reach.shiftlock.url, ns, w.oneKey), ...ours },
  ];
  for (const system of systems) {
    const keyPrefix = `bench/m${m++}`;
    await measure(
      system.name,
      w.name,
      w.clients,
      () => measureLocks(system, { clients: w.clients, oneKey: w.oneKey, durationMs, keyPrefix }),
      system.rttMs,
    );
  }
}

const memory = {
  shiftlockMb: server.rssMb(),
  ...(etcd ? { etcdMb: etcd.rssMb() } : {}),
  ...(redis ? { redisMb: redis.rssMb() } : {}),
};
const etcdLeft = etcd ? etcdKeysLeft(etcd.address, "bench/") : undefined;
if (etcdLeft !== undefined && etcdLeft > 0) {
  rows.push({
    system: "etcd",
    workload: "check",
    clients: 0,
    error: `${etcdLeft} lock keys left`,
    loadAvg1m: load1m(),
  });
}
await http.close();
await plain.close();
await stopAll();

/**
 * @param {string} system prefix of the system's name
 * @param {string} workload
 */
const find = (system, workload) =>
  rows.find((r) => r.system.startsWith(system) && r.workload === workload && r.error === undefined);

/**
 * @param {string} what
 * @param {number | undefined} value
 * @param {string} target
 * @param {boolean | undefined} met
 */
const ratio = (what, value, target, met) => ({
  what,
  value: value === undefined || !Number.isFinite(value) ? "n/a" : `${round(value)}×`,
  target,
  met: met === undefined ? "n/a" : met ? "met" : "not met",
});
/** @param {Row | undefined} a @param {Row | undefined} b */
const cyclesRatio = (a, b) => (a?.perSecond && b?.perSecond ? a.perSecond / b.perSecond : undefined);
/** @param {Row | undefined} claims @param {Row | undefined} noop */
const requestShare = (claims, noop) =>
  claims?.requestsPerSecond && noop?.requestsPerSecond ? claims.requestsPerSecond / noop.requestsPerSecond : undefined;

const ratios = [];
for (const w of ["1 client", "32 clients, 32 keys"]) {
  const v = cyclesRatio(find("shiftlock claims", w), find("etcd", w));
  ratios.push(ratio(`claims ÷ etcd cycles/s, ${w}`, v, "≥ 1.2×", v === undefined ? undefined : v >= 1.2));
}
for (const [w, c] of [
  ["1 client", "1 client(s)"],
  ["32 clients, 32 keys", "32 client(s)"],
]) {
  const v = requestShare(find("shiftlock claims", /** @type {string} */ (w)), find("no-op", /** @type {string} */ (c)));
  ratios.push(ratio(`claims requests/s ÷ no-op requests/s, ${w}`, v, "≥ 0.8×", v === undefined ? undefined : v >= 0.8));
}
{
  const coord = find("shiftlock coord", "32 clients, one key");
  const etcdOne = find("etcd", "32 clients, one key");
  const v = cyclesRatio(coord, etcdOne);
  ratios.push(ratio("coord ÷ etcd cycles/s, 32 clients on one key", v, "≥ 2×", v === undefined ? undefined : v >= 2));
  const p = coord?.p99 !== undefined && etcdOne?.p99 !== undefined ? coord.p99 / etcdOne.p99 : undefined;
  ratios.push(ratio("coord p99 ÷ etcd p99, 32 clients on one key", p, "< 1×", p === undefined ? undefined : p < 1));
}
for (const w of ["1 client", "32 clients, 32 keys"]) {
  const v = cyclesRatio(find("shiftlock claims", w), find("floor", w));
  const target = process.env["TMPDIR"]?.startsWith("/dev/shm") ? "≥ 0.8× (tmpfs)" : "— (on disk: fsync hides it)";
  ratios.push(
    ratio(`claims ÷ floor cycles/s, ${w}`, v, target, target.startsWith("≥") && v !== undefined ? v >= 0.8 : undefined),
  );
}
for (const w of ["1 client", "32 clients, 32 keys", "32 clients, one key"]) {
  const v = cyclesRatio(find("shiftlock claims", w), find("Redis", w));
  ratios.push(ratio(`claims ÷ Redis cycles/s, ${w} (context)`, v, "—", undefined));
}

const table = markdownTable(
  [
    "system",
    "workload",
    "cycles/s",
    "requests/s",
    "p50 ms",
    "p99 ms",
    "acquire attempts / cycle",
    "RTT ms",
    "p50 in RTTs",
    "load 1m",
  ],
  rows.map((r) =>
    r.error !== undefined
      ? [r.system, r.workload, `failed: ${r.error}`, "", "", "", "", "", "", r.loadAvg1m]
      : [
          r.system,
          r.workload,
          r.perSecond ?? "",
          r.requestsPerSecond ?? "",
          r.p50 ?? "",
          r.p99 ?? "",
          r.attemptsPerCycle ?? "",
          r.rttMs ?? "",
          r.p50Rtts ?? "",
          r.loadAvg1m,
        ],
  ),
  "llrrrrrrrr",
);
const ratioTable = markdownTable(
  ["ratio", "value", "target", ""],
  ratios.map((r) => [r.what, r.value, r.target, r.met]),
);
const results = {
  command: `npm run bench:peers -- ${process.argv.slice(2).join(" ")}`.replace(/ -- $/, ""),
  startedAt,
  finishedAt: new Date().toISOString(),
  commit: commitInfo(),
  machine,
  client: http.name,
  server: server.description,
  peers: {
    etcd: etcd ? { version: etcd.version, config: etcd.config } : "not installed",
    redis: redis ? { version: redis.version, config: redis.config } : "not installed",
  },
  durationSeconds: durationMs / 1000,
  wanRttMs: options.rttMs ?? null,
  stateDir: process.env["TMPDIR"] ?? "/tmp",
  memoryMbAtEnd: memory,
  etcdKeysLeft: etcdLeft,
  rows,
  ratios,
};
const memoryLine = Object.entries(memory)
  .map(([k, v]) => `${k.replace(/Mb$/, "")} ${v} MB`)
  .join(", ");
console.log(`\n${table}\n\n${ratioTable}\n\nresident memory at the end: ${memoryLine}`);
mkdirSync("bench/results", { recursive: true });
writeFileSync(`bench/results/${options.tag}.json`, `${JSON.stringify(results, null, 2)}\n`);
console.log(`raw results: bench/results/${options.tag}.json`);
if (options.writeDoc) {
  const peerLine =
    etcd && redis
      ? `Peers: etcd ${etcd.version} (${etcd.config}); Redis ${redis.version} (${redis.config}). Both on loopback, started by the run.`
      : `Peers: not installed on this machine (${INSTALL_HINT}); shiftlock alone.`;
  writeDocSection(
    options.tag,
    [
      `Command: \`${results.command}\` at commit ${results.commit} (started ${results.startedAt}).`,
      "",
      `Machine: ${describeMachine(machine)}. Client: ${results.client} for HTTP (shiftlock, etcd's JSON gateway), bench/redis-client.mjs for Redis, on the same machine. shiftlock server: ${server.description}. ${peerLine} Each figure is a ${results.durationSeconds} s closed loop after a 1.5 s warm-up. Resident memory at the end: ${memoryLine}.`,
      "",
      table,
      "",
      ratioTable,
    ].join("\n"),
  );
}
process.exit(rows.some((r) => r.error !== undefined) ? 1 : 0);
