/**
 * Command lines of the benchmark scripts (`bench/run.mjs`, `bench/peers.mjs`,
 * `bench/soak.mjs`, `bench/fsync-trace.mjs`, `bench/direct-server.ts`, `bench/profile.mjs`), parsed with the
 * repository's one strict rule (src/cli/options.mjs), as pure functions so tests can check
 * them without running a benchmark.
 *
 * Guarantees: a typo'd or unknown option, a malformed number, an unknown phase or server
 * kind is a `UsageError` (the scripts then exit 2 before starting anything); options keep
 * their `--name=value` and `--name value` forms and documented defaults.
 * Does not start servers or read files.
 */
import { parseChoice, parseDecimal, parseInteger, parseOptions, UsageError } from "../src/cli/options.mjs";

/** What `bench/run.mjs` can measure, in the order it runs them. */
export const PHASES = /** @type {const} */ (["healthz", "claims", "coord", "handover", "fanout", "expiry"]);
/** @typedef {(typeof PHASES)[number]} Phase */

/**
 * Which server a measurement runs against: `npm-start` is the serving half of `npm start`
 * (workerd behind the Node front, exactly as users run it); `direct` is the same workerd
 * reached on its own socket, without the front (a diagnostic that shows the front's cost).
 */
export const SERVER_KINDS = /** @type {const} */ (["npm-start", "direct"]);
/** @typedef {(typeof SERVER_KINDS)[number]} ServerKind */

/** A tag names a results file and an HTML comment marker: one plain word. */
function checkTag(/** @type {string} */ tag) {
  if (!/^[\w.-]+$/.test(tag))
    throw new UsageError(`--tag must be letters, digits, ".", "_" or "-", got ${JSON.stringify(tag)}`);
  return tag;
}

export const BENCH_USAGE = `usage: node bench/run.mjs [options]   (npm run bench -- [options])

  --duration=SECONDS     measured seconds per throughput figure (default 10)
  --phases=LIST          comma-separated subset of ${PHASES.join(",")} (default all)
  --max-watchers=N       largest fan-out measured: 1, 100 and 1000 up to N (default 1000)
  --server=KIND          npm-start (default: the serving half of npm start, through the
                         Node front) or direct (diagnostic: workerd's own socket, no front)
  --tag=NAME             results file bench/results/NAME.json (default latest, or direct)
  --write-doc            also rewrite this tag's generated section of docs/BENCHMARKS.md
  --rtt-ms=MS            put every client behind a loopback relay adding this round trip
                         (bench/wan-relay.mjs; the server stays local); a measurement whose
                         no-op RTT through the relay is more than 2 ms off is refused
  --help
`;

/**
 * @typedef {object} BenchOptions
 * @property {boolean} help
 * @property {number} durationMs measured duration of each throughput figure
 * @property {Set<Phase>} phases
 * @property {number} maxWatchers
 * @property {ServerKind} server
 * @property {string} tag names bench/results/<tag>.json and the doc section
 * @property {boolean} writeDoc
 * @property {number | undefined} rttMs the WAN relay's round trip; undefined: no relay
 */

/** `--rtt-ms`, shared by bench, bench:peers and the demo. */
export const parseRttMs = (/** @type {string | undefined} */ text) =>
  parseDecimal("--rtt-ms", text, { min: 1, max: 1_000, unit: "ms" });

/**
 * @param {readonly string[]} argv arguments after `bench/run.mjs`
 * @returns {BenchOptions}
 * @throws {UsageError}
 */
export function parseBenchArgs(argv) {
  const { values } = parseOptions(argv, {
    duration: { type: "string" },
    phases: { type: "string" },
    "max-watchers": { type: "string" },
    server: { type: "string" },
    tag: { type: "string" },
    "write-doc": { type: "boolean" },
    "rtt-ms": { type: "string" },
    help: { type: "boolean", short: "h" },
  });
  const seconds = parseDecimal("--duration", values.duration, { min: 0.1, max: 3_600, unit: "seconds" }) ?? 10;
  const phases = (values.phases ?? PHASES.join(","))
    .split(",")
    .map((phase) => /** @type {Phase} */ (parseChoice("--phases", phase, PHASES)));
  const server = parseChoice("--server", values.server, SERVER_KINDS) ?? "npm-start";
  const tag = checkTag(values.tag ?? (server === "direct" ? "direct" : "latest"));
  return {
    help: values.help === true,
    durationMs: Math.round(seconds * 1000),
    phases: new Set(phases),
    maxWatchers: parseInteger("--max-watchers", values["max-watchers"]) ?? 1000,
    server,
    tag,
    writeDoc: values["write-doc"] === true,
    rttMs: parseRttMs(values["rtt-ms"]),
  };
}

export const PEERS_USAGE = `usage: node bench/peers.mjs [options]   (npm run bench:peers -- [options])

  --duration=SECONDS     measured seconds per figure (default 10)
  --server=KIND          npm-start (default) or direct (diagnostic, no front)
  --tag=NAME             results file bench/results/NAME.json (default peers)
  --write-doc            also rewrite this tag's generated section of docs/BENCHMARKS.md
  --rtt-ms=MS            put every client (shiftlock, etcd, Redis) behind a loopback relay
                         adding this round trip (bench/wan-relay.mjs); refuses to run when
                         a no-op through it is more than 2 ms off
  --help

Needs etcd, etcdctl and redis-server on PATH for the peers (Debian:
apt-get install -y etcd-server etcd-client redis-server); without them it measures
shiftlock alone and says how to install them.
`;

/**
 * @param {readonly string[]} argv arguments after `bench/peers.mjs`
 * @returns {{ help: boolean, durationMs: number, server: ServerKind, tag: string, writeDoc: boolean, rttMs: number | undefined }}
 * @throws {UsageError}
 */
export function parsePeersArgs(argv) {
  const { values } = parseOptions(argv, {
    duration: { type: "string" },
    server: { type: "string" },
    tag: { type: "string" },
    "write-doc": { type: "boolean" },
    "rtt-ms": { type: "string" },
    help: { type: "boolean", short: "h" },
  });
  const seconds = parseDecimal("--duration", values.duration, { min: 0.1, max: 3_600, unit: "seconds" }) ?? 10;
  return {
    help: values.help === true,
    durationMs: Math.round(seconds * 1000),
    server: parseChoice("--server", values.server, SERVER_KINDS) ?? "npm-start",
    tag: checkTag(values.tag ?? "peers"),
    writeDoc: values["write-doc"] === true,
    rttMs: parseRttMs(values["rtt-ms"]),
  };
}

export const SOAK_USAGE = `usage: node bench/soak.mjs [options]   (npm run soak -- [options])

  --duration-s=SECONDS   how long the mixed traffic runs (default 600)
  --sample-s=SECONDS     memory sample interval (default 10)
  --watchers=N           WebSocket watchers, half on claims, half on coord (default 100)
  --server=KIND          npm-start (default) or direct (diagnostic, no front)
  --tag=NAME             results bench/results/NAME.json and NAME.svg (default soak)
  --write-doc            also rewrite the soak section of docs/BENCHMARKS.md and
                         docs/soak-memory.svg
  --help
`;

/**
 * @typedef {object} SoakOptions
 * @property {boolean} help
 * @property {number} durationMs
 * @property {number} sampleMs
 * @property {number} watchers
 * @property {ServerKind} server
 * @property {string} tag
 * @property {boolean} writeDoc
 */

/**
 * @param {readonly string[]} argv arguments after `bench/soak.mjs`
 * @returns {SoakOptions}
 * @throws {UsageError}
 */
export function parseSoakArgs(argv) {
  const { values } = parseOptions(argv, {
    "duration-s": { type: "string" },
    "sample-s": { type: "string" },
    watchers: { type: "string" },
    server: { type: "string" },
    tag: { type: "string" },
    "write-doc": { type: "boolean" },
    help: { type: "boolean", short: "h" },
  });
  const seconds = parseInteger("--duration-s", values["duration-s"], { min: 10, max: 86_400, unit: "seconds" }) ?? 600;
  const sample = parseDecimal("--sample-s", values["sample-s"], { min: 1, max: 600, unit: "seconds" }) ?? 10;
  return {
    help: values.help === true,
    durationMs: seconds * 1000,
    sampleMs: Math.round(sample * 1000),
    watchers: parseInteger("--watchers", values.watchers, { min: 0, max: 2_000 }) ?? 100,
    server: parseChoice("--server", values.server, SERVER_KINDS) ?? "npm-start",
    tag: checkTag(values.tag ?? "soak"),
    writeDoc: values["write-doc"] === true,
  };
}

export const FSYNC_TRACE_USAGE = `usage: node bench/fsync-trace.mjs [options]

  --server=KIND    npm-start (default) or direct
  --count=N        requests of each kind traced (default 100)
  --help
`;

/**
 * @param {readonly string[]} argv arguments after `bench/fsync-trace.mjs`
 * @returns {{ help: boolean, server: ServerKind, count: number }}
 * @throws {UsageError}
 */
export function parseFsyncTraceArgs(argv) {
  const { values } = parseOptions(argv, {
    server: { type: "string" },
    count: { type: "string" },
    help: { type: "boolean", short: "h" },
  });
  return {
    help: values.help === true,
    server: parseChoice("--server", values.server, SERVER_KINDS) ?? "npm-start",
    count: parseInteger("--count", values.count, { min: 1 }) ?? 100,
  };
}

export const DIRECT_SERVER_USAGE = `usage: node --import tsx bench/direct-server.ts --persist-to DIR --bundle DIR [--listing-index on|off]
`;

/**
 * The diagnostic server's options (it is started by bench/server.mjs).
 * @param {readonly string[]} argv
 * @returns {{ help: boolean, persistTo: string, bundle: string, listingIndex: "on" | "off" }}
 * @throws {UsageError}
 */
export function parseDirectServerArgs(argv) {
  const { values } = parseOptions(argv, {
    "persist-to": { type: "string" },
    bundle: { type: "string" },
    "listing-index": { type: "string", default: "on" },
    help: { type: "boolean", short: "h" },
  });
  if (values.help === true) return { help: true, persistTo: "", bundle: "", listingIndex: "on" };
  if (values["persist-to"] === undefined) throw new UsageError("--persist-to is required");
  if (values.bundle === undefined) throw new UsageError("--bundle is required");
  const listingIndex = /** @type {"on" | "off"} */ (
    parseChoice("--listing-index", values["listing-index"], ["on", "off"]) ?? "on"
  );
  return { help: false, persistTo: values["persist-to"], bundle: values.bundle, listingIndex };
}

/** What `bench/profile.mjs` drives while it profiles. */
export const PROFILE_WORKLOADS = /** @type {const} */ (["both", "claims", "coord", "fanout"]);
/** @typedef {(typeof PROFILE_WORKLOADS)[number]} ProfileWorkload */

export const PROFILE_USAGE = `usage: node bench/profile.mjs [options]   (npm run bench:profile -- [options])

  --duration=SECONDS     profiled seconds of the closed loop (default 10)
  --workload=KIND        both (default: claim acquire→release then coord
                         acquire→release per cycle), claims, coord, or fanout (one
                         publish to a scope with --watchers sockets per cycle)
  --watchers=N           fanout: watch sockets on the scope (default 1000)
  --clients=N            concurrent closed loops, each on its own claim and scope (default 1)
  --sampling-us=N        V8 sampling interval in microseconds (default 100)
  --top=N                functions listed per phase (default 5)
  --tag=NAME             writes bench/results/NAME.cpuprofile and NAME.json (default profile)
  --help
`;

/**
 * @typedef {object} ProfileOptions
 * @property {boolean} help
 * @property {number} durationMs
 * @property {ProfileWorkload} workload
 * @property {number} watchers
 * @property {number} clients
 * @property {number} samplingUs
 * @property {number} top
 * @property {string} tag
 */

/**
 * @param {readonly string[]} argv arguments after `bench/profile.mjs`
 * @returns {ProfileOptions}
 * @throws {UsageError}
 */
export function parseProfileArgs(argv) {
  const { values } = parseOptions(argv, {
    duration: { type: "string" },
    workload: { type: "string" },
    watchers: { type: "string" },
    clients: { type: "string" },
    "sampling-us": { type: "string" },
    top: { type: "string" },
    tag: { type: "string" },
    help: { type: "boolean", short: "h" },
  });
  const seconds = parseDecimal("--duration", values.duration, { min: 0.5, max: 600, unit: "seconds" }) ?? 10;
  return {
    help: values.help === true,
    durationMs: Math.round(seconds * 1000),
    workload: parseChoice("--workload", values.workload, PROFILE_WORKLOADS) ?? "both",
    watchers: parseInteger("--watchers", values.watchers, { min: 1, max: 5000 }) ?? 1000,
    clients: parseInteger("--clients", values.clients, { min: 1, max: 256 }) ?? 1,
    samplingUs: parseInteger("--sampling-us", values["sampling-us"], { min: 10, max: 100_000, unit: "µs" }) ?? 100,
    top: parseInteger("--top", values.top, { min: 1, max: 100 }) ?? 5,
    tag: checkTag(values.tag ?? "profile"),
  };
}
