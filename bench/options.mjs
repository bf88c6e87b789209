/**
 * Command lines of the benchmark scripts (`bench/run.mjs`, `bench/fsync-trace.mjs`,
 * `bench/miniflare-child.mjs`), parsed with the repository's one strict rule
 * (src/cli/options.mjs), as pure functions so tests can check them without running a
 * benchmark.
 *
 * Guarantees: a typo'd or unknown option, a malformed number, an unknown phase or server
 * kind is a `UsageError` (the scripts then exit 2 before starting anything); every option
 * the scripts had keeps its name, its `--name=value` form and its default.
 * Does not start servers or read files.
 */
import { parseChoice, parseDecimal, parseInteger, parseOptions, UsageError } from "../src/cli/options.mjs";

/** What `bench/run.mjs` can measure, in the order it runs them. */
export const PHASES = /** @type {const} */ (["healthz", "claims", "coord", "handover", "fanout"]);
/** @typedef {(typeof PHASES)[number]} Phase */

/** Which server a measurement runs against: `npm start` or the diagnostic Miniflare child. */
export const SERVER_KINDS = /** @type {const} */ (["wrangler-dev", "miniflare"]);
/** @typedef {(typeof SERVER_KINDS)[number]} ServerKind */

export const BENCH_USAGE = `usage: node bench/run.mjs [options]   (npm run bench -- [options])

  --duration=SECONDS     measured seconds per throughput figure (default 10)
  --phases=LIST          comma-separated subset of ${PHASES.join(",")} (default all)
  --max-watchers=N       largest fan-out measured: 1, 100 and 1000 up to N (default 1000)
  --server=KIND          wrangler-dev (npm start, default) or miniflare (diagnostic)
  --tag=NAME             results file bench/results/NAME.json (default latest, or miniflare)
  --write-doc            also rewrite this tag's generated section of docs/BENCHMARKS.md
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
 */

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
    help: { type: "boolean", short: "h" },
  });
  const seconds = parseDecimal("--duration", values.duration, { min: 0.1, max: 3_600, unit: "seconds" }) ?? 10;
  const phases = (values.phases ?? PHASES.join(","))
    .split(",")
    .map((phase) => /** @type {Phase} */ (parseChoice("--phases", phase, PHASES)));
  const server = parseChoice("--server", values.server, SERVER_KINDS) ?? "wrangler-dev";
  const tag = values.tag ?? (server === "miniflare" ? "miniflare" : "latest");
  // The tag becomes a file name and an HTML comment marker: keep it to one plain word.
  if (!/^[\w.-]+$/.test(tag))
    throw new UsageError(`--tag must be letters, digits, ".", "_" or "-", got ${JSON.stringify(tag)}`);
  return {
    help: values.help === true,
    durationMs: Math.round(seconds * 1000),
    phases: new Set(phases),
    maxWatchers: parseInteger("--max-watchers", values["max-watchers"]) ?? 1000,
    server,
    tag,
    writeDoc: values["write-doc"] === true,
  };
}

export const FSYNC_TRACE_USAGE = `usage: node bench/fsync-trace.mjs [options]

  --server=KIND    miniflare (default) or wrangler-dev
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
    server: parseChoice("--server", values.server, SERVER_KINDS) ?? "miniflare",
    count: parseInteger("--count", values.count, { min: 1 }) ?? 100,
  };
}

export const MINIFLARE_CHILD_USAGE = `usage: node bench/miniflare-child.mjs <bundleDir> <stateDir> <port>
`;

/**
 * The diagnostic server's three positional arguments (it is started by bench/server.mjs).
 * @param {readonly string[]} argv
 * @returns {{ help: boolean, bundleDir: string, stateDir: string, port: number }}
 * @throws {UsageError}
 */
export function parseMiniflareChildArgs(argv) {
  const { values, positionals } = parseOptions(
    argv,
    { help: { type: "boolean", short: "h" } },
    { allowPositionals: true },
  );
  const [bundleDir, stateDir, portText, extra] = positionals;
  if (values.help === true) return { help: true, bundleDir: "", stateDir: "", port: 0 };
  if (bundleDir === undefined || stateDir === undefined || portText === undefined) {
    throw new UsageError("needs <bundleDir> <stateDir> <port>");
  }
  if (extra !== undefined) throw new UsageError(`unexpected argument ${JSON.stringify(extra)}`);
  const port = parseInteger("<port>", portText, { min: 1, max: 65_535 }) ?? 0;
  return { help: false, bundleDir, stateDir, port };
}
