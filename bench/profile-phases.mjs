/**
 * Reading a V8 CPU profile (`Profiler.stop`'s `.cpuprofile`) of the Worker's isolate: self
 * time per function, mapped back to the TypeScript and package sources through the bundle's
 * source map, and grouped by the phase of the request path it belongs to.
 *
 * Phases, decided by the source file of the function (first match in {@link PHASE_RULES}):
 * auth (src/http/auth.ts), zod (the zod package, zod-invalid.ts), hono/mount (hono, the
 * router and its pipeline: mount, body, params, names, cors), RPC (the route handlers that
 * address an object stub, and the stub calls they make), SQL/storage (the stores,
 * migrations, the alarm schedule, and the storage API's native calls they make), object
 * logic (the Durable Objects' own JavaScript and the pure machines), other JS.
 * A native function (no source: `exec`, `digest`, a stub method) counts in the phase of its
 * JavaScript caller, except `JSON.parse`/`JSON.stringify`, which are JSON wherever they are
 * called. Time V8 cannot attribute to any JavaScript — workerd's own C++ (HTTP parsing, the
 * RPC transport, SQLite and its I/O when not under a JS call) — is "runtime", garbage
 * collection is "GC", and `(idle)` (waiting for I/O) is left out of every share.
 *
 * Every sample weighs the same. V8's `timeDeltas` are wall-clock gaps, and on a loaded
 * machine a gap includes the time the thread was descheduled (gaps of 40 ms at a 100 µs
 * interval were seen), which would hand that time to whatever ran next; counting samples
 * does not. Absolute cost comes from the process's CPU time instead (bench/profile.mjs).
 *
 * Guarantees: pure (no I/O); every busy sample lands in exactly one phase, so the shares
 * add up to 100 % of the busy samples. Does not: attribute time spent in one isolate on
 * behalf of another (there is one isolate: the Worker and its Durable Objects share it).
 */
import { SourceMap } from "node:module";

/** Phases in the order they are printed. */
export const PROFILE_PHASES = /** @type {const} */ ([
  "auth",
  "zod",
  "hono/mount",
  "RPC",
  "SQL/storage",
  "JSON",
  "object logic",
  "other JS",
  "runtime",
  "GC",
]);
/** @typedef {(typeof PROFILE_PHASES)[number]} ProfilePhase */

/**
 * Source path patterns, first match wins. Paths are the source map's (`../src/http/auth.ts`,
 * `../node_modules/hono/dist/…`).
 * @type {ReadonlyArray<readonly [RegExp, ProfilePhase]>}
 */
export const PHASE_RULES = [
  [/src\/http\/auth\.ts$/, "auth"],
  [/node_modules\/zod\/|src\/protocol\/zod-invalid\.ts$/, "zod"],
  [/node_modules\/hono\/|src\/http\/(app|mount|body|params|cors)\.ts$|src\/protocol\/(names|route)\.ts$/, "hono/mount"],
  [/src\/(http\/(claims|coord|generations)|durable\/object-names)\.ts$/, "RPC"],
  [/src\/[^/]+\/store\.ts$|src\/durable\/(migrations|alarm-schedule)\.ts$/, "SQL/storage"],
  [/src\/(core|claims|coord|generations|durable)\//, "object logic"],
];

/** Natives that are JSON wherever they are called. */
const JSON_NATIVES = new Set(["parse", "stringify"]);

/**
 * @typedef {object} CallFrame
 * @property {string} functionName
 * @property {string} url
 * @property {number} lineNumber 0-based
 * @property {number} columnNumber 0-based
 */
/**
 * @typedef {object} ProfileNode
 * @property {number} id
 * @property {CallFrame} callFrame
 * @property {number[]} [children]
 */
/**
 * @typedef {object} CpuProfile
 * @property {ProfileNode[]} nodes
 * @property {number} startTime µs
 * @property {number} endTime µs
 * @property {number[]} samples node ids
 * @property {number[]} timeDeltas µs before each sample
 */
/**
 * One function's self time, in samples.
 * @typedef {{ name: string, source: string, phase: ProfilePhase, self: number }} FunctionCost
 */
/**
 * @typedef {object} PhaseSummary
 * @property {number} busy samples that were not idle
 * @property {number} idle
 * @property {Record<ProfilePhase, number>} phases busy samples per phase
 * @property {FunctionCost[]} functions every function with self samples, most first
 */

/**
 * Where a bundle position came from: the original source path and 1-based line, or
 * undefined when the map has nothing there.
 * @typedef {(url: string, line: number, column: number) => { source: string, line: number } | undefined} Locate
 */

/**
 * A {@link Locate} over the bundle's source map; frames of other scripts are not located.
 * @param {object} map the parsed `index.js.map`
 * @param {string} bundleName the bundle's file name as it appears at the end of frame URLs
 * @returns {Locate}
 */
export function sourceMapLocator(map, bundleName) {
  const sourceMap = new SourceMap(/** @type {import("node:module").SourceMapPayload} */ (map));
  return (url, line, column) => {
    if (!url.endsWith(bundleName)) return undefined;
    const entry = /** @type {Partial<import("node:module").SourceMapping>} */ (sourceMap.findEntry(line, column));
    if (entry.originalSource === undefined || entry.originalLine === undefined) return undefined;
    return { source: entry.originalSource, line: entry.originalLine + 1 };
  };
}

/** @param {string} source @returns {ProfilePhase} */
export function phaseOfSource(source) {
  for (const [pattern, phase] of PHASE_RULES) if (pattern.test(source)) return phase;
  return "other JS";
}

/** A short, stable display path: from `src/` or the package directory on. */
function shortSource(/** @type {string} */ source) {
  const at = source.search(/(src|node_modules)\//);
  return at < 0 ? source : source.slice(at).replace(/^node_modules\//, "");
}

/**
 * Self time per function and per phase.
 * @param {CpuProfile} profile
 * @param {Locate} locate
 * @returns {PhaseSummary}
 */
export function summarizeProfile(profile, locate) {
  /** @type {Map<number, ProfileNode>} */
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  /** @type {Map<number, number>} */
  const parentOf = new Map();
  for (const node of profile.nodes) for (const child of node.children ?? []) parentOf.set(child, node.id);

  /** @type {Map<number, { phase: ProfilePhase, name: string, source: string }>} */
  const resolved = new Map();
  /** @param {number} id @returns {{ phase: ProfilePhase, name: string, source: string }} */
  const resolve = (id) => {
    const known = resolved.get(id);
    if (known !== undefined) return known;
    const node = /** @type {ProfileNode} */ (byId.get(id));
    const { functionName, url, lineNumber, columnNumber } = node.callFrame;
    const name = functionName === "" ? "(anonymous)" : functionName;
    /** @type {{ phase: ProfilePhase, name: string, source: string }} */
    let result;
    const located = url === "" ? undefined : locate(url, lineNumber, columnNumber);
    if (name === "(program)") result = { phase: "runtime", name, source: "workerd" };
    else if (name === "(garbage collector)") result = { phase: "GC", name, source: "V8" };
    else if (located !== undefined) {
      result = { phase: phaseOfSource(located.source), name, source: `${shortSource(located.source)}:${located.line}` };
    } else if (url === "" && JSON_NATIVES.has(name)) result = { phase: "JSON", name: `JSON.${name}`, source: "native" };
    else {
      // A native, or a runtime-internal script: counted where its JavaScript caller is.
      const parent = parentOf.get(id);
      const caller = parent === undefined ? undefined : resolve(parent);
      const phase = caller === undefined || caller.phase === "runtime" ? "other JS" : caller.phase;
      result = { phase, name, source: url === "" ? "native" : url };
    }
    resolved.set(id, result);
    return result;
  };

  const phases = /** @type {Record<ProfilePhase, number>} */ (Object.fromEntries(PROFILE_PHASES.map((p) => [p, 0])));
  /** @type {Map<string, FunctionCost>} */
  const functions = new Map();
  let idle = 0;
  let busy = 0;
  for (const id of profile.samples) {
    const frame = byId.get(id)?.callFrame;
    if (frame?.functionName === "(idle)") {
      idle++;
      continue;
    }
    busy++;
    const { phase, name, source } = resolve(id);
    phases[phase]++;
    const key = `${phase}\u0000${name}\u0000${source}`;
    const cost = functions.get(key) ?? { name, source, phase, self: 0 };
    cost.self++;
    functions.set(key, cost);
  }
  return { busy, idle, phases, functions: [...functions.values()].sort((a, b) => b.self - a.self) };
}

/**
 * The printed report: each phase's share of the busy samples, what that is in CPU per
 * cycle, and the phase's top functions.
 * @param {PhaseSummary} summary
 * @param {{ top: number, cpuUsPerCycle: number }} o `cpuUsPerCycle`: the server's CPU time
 *   per workload cycle, split over the phases by their shares
 * @returns {string}
 */
export function renderPhases(summary, { top, cpuUsPerCycle }) {
  const share = (/** @type {number} */ n) => (summary.busy === 0 ? 0 : n / summary.busy);
  const pct = (/** @type {number} */ n) => (100 * share(n)).toFixed(1);
  const lines = [
    `${summary.busy} busy samples (${summary.idle} idle); ${cpuUsPerCycle.toFixed(0)} µs of workerd CPU per cycle`,
    "",
    "| phase | % of busy samples | µs per cycle |",
    "|---|---:|---:|",
  ];
  for (const phase of PROFILE_PHASES) {
    const n = summary.phases[phase];
    lines.push(`| ${phase} | ${pct(n)} | ${(share(n) * cpuUsPerCycle).toFixed(0)} |`);
  }
  for (const phase of PROFILE_PHASES) {
    const inPhase = summary.functions.filter((f) => f.phase === phase).slice(0, top);
    if (inPhase.length === 0) continue;
    lines.push("", `${phase} (${pct(summary.phases[phase])} %):`);
    for (const f of inPhase) lines.push(`  ${pct(f.self).padStart(5)} %  ${f.name}  ${f.source}`);
  }
  return lines.join("\n");
}
