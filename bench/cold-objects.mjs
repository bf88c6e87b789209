#!/usr/bin/env node
/**
 * `npm run bench:cold`: what spreading pairs over many objects costs, ours against the
 * floor's — workerd's CPU per acquire → release pair when each pair goes to an object the
 * local runtime has evicted (`--cold-claims` objects taken in turn: each is touched again
 * only after all the others, tens of seconds later) and when it goes to one of a few objects
 * kept in memory (`--warm-claims`, each touched again within a fraction of a second). The
 * difference between the two rows is more than the start of an evicted object: an object
 * kept in memory also shares one listing delivery among several changes, writes its lease
 * alarm once, and has no alarm fire while it is evicted. The start alone is in bench:cost
 * (docs/performance.md: an evicted object's read against the same read in memory, the
 * floor's likewise).
 *
 *   TMPDIR=/dev/shm node bench/cold-objects.mjs [--pairs=2000] [--cold-claims=2000]
 *     [--warm-claims=100] [--rounds=3] [--listing-index=on|off]
 *
 * Servers: the serving half of `npm start` (its `--listing-index`; workerd's CPU is read from
 * its own process, so the Node front's is not counted) and the floor (bench/floor/worker.js)
 * on its own workerd; both keep their state under $TMPDIR. Every figure is
 * bench/server.mjs's cpuUsPerOp over `--pairs` pairs; each row is the median of `--rounds`
 * rounds, interleaved (floor cold, ours cold, floor warm, ours warm), all rounds printed.
 * Guarantees: every reply's status is checked; servers stop and their state is removed on
 * exit. Does not: explain where the start's time goes (docs/performance.md does what it
 * can), or make a figure taken on a loaded machine honest (the load is printed). Not part of
 * `npm test`.
 */
import { parseChoice, parseInteger, parseOptions } from "../src/cli/options.mjs";
import { hardLimit, stopAll } from "./cleanup.mjs";
import { startFloor } from "./floor/serve.mjs";
import { makeClient } from "./http.mjs";
import { claimLocks, floorLocks } from "./locks.mjs";
import { commitInfo, describeMachine, load1m, machineInfo, markdownTable } from "./report.mjs";
import { childPids, cpuUsPerOp, groupPids, startServer } from "./server.mjs";

const { values } = parseOptions(process.argv.slice(2), {
  pairs: { type: "string" },
  "cold-claims": { type: "string" },
  "warm-claims": { type: "string" },
  rounds: { type: "string" },
  "listing-index": { type: "string" },
});
const PAIRS = parseInteger("--pairs", values.pairs, { min: 10, max: 20_000 }) ?? 2_000;
const COLD = parseInteger("--cold-claims", values["cold-claims"], { min: 1, max: 20_000 }) ?? 2_000;
const WARM = parseInteger("--warm-claims", values["warm-claims"], { min: 1, max: 1_000 }) ?? 100;
const ROUNDS = parseInteger("--rounds", values.rounds, { min: 1, max: 9 }) ?? 3;
const listingIndex = /** @type {"on" | "off"} */ (
  parseChoice("--listing-index", values["listing-index"], ["on", "off"]) ?? "on"
);
/** Long enough for the deliveries and alarms a pair causes to land inside its window. */
const SETTLE_MS = 2_500;
hardLimit("bench:cold", 40 * 60_000);
const startLoad = load1m();

const floor = await startFloor();
const plain = await makeClient();
const [floorPid] = childPids("workerd");
const server = await startServer("npm-start", { listingIndex });
const [serverPid] = groupPids(server.pgid, "workerd");
if (floorPid === undefined || serverPid === undefined) throw new Error("no workerd process found in /proc");
const http = await makeClient("dev-token");

// The same acquire → release cycles as bench:peers (bench/locks.mjs), one client, no contention.
const ours = await claimLocks(http, server.url, `cold-${crypto.randomUUID().slice(0, 8)}`).open(1);
const floors = await floorLocks(plain, floor.url).open(1);
const ourPair = (/** @type {string} */ name) => ours.cycle(0, name, Infinity);
const floorPair = (/** @type {string} */ name) => floors.cycle(0, name, Infinity);

/** The two sets of objects: names, and how many the pairs cycle through. */
const SETS = [
  { label: "evicted objects", prefix: "c", count: COLD },
  { label: "objects in memory", prefix: "w", count: WARM },
];
/** The rows, each with the pair it runs on object `i` and the floor row it is divided by. */
const rows = SETS.flatMap(({ label, prefix, count }) => [
  {
    name: `floor, ${label}`,
    floor: `floor, ${label}`,
    pid: floorPid,
    run: (/** @type {number} */ i) => floorPair(`${prefix}-${i % count}`),
  },
  {
    name: `shiftlock claims, ${label}`,
    floor: `floor, ${label}`,
    pid: serverPid,
    run: (/** @type {number} */ i) => ourPair(`${prefix}-${i % count}`),
  },
]);
// Every object exists before anything is measured (its tables created, code compiled).
for (const { prefix, count } of SETS) {
  for (let i = 0; i < count; i++) await Promise.all([ourPair(`${prefix}-${i}`), floorPair(`${prefix}-${i}`)]);
}

/** @type {Map<string, number[]>} */
const measured = new Map();
for (let round = 0; round < ROUNDS; round++) {
  for (const row of rows) {
    const us = await cpuUsPerOp(row.pid, row.run, PAIRS, SETTLE_MS);
    measured.set(row.name, [...(measured.get(row.name) ?? []), us]);
    process.stderr.write(`round ${round + 1}: ${row.name}: ${us} µs per pair\n`);
  }
}
const endLoad = load1m();
await http.close();
await plain.close();
await stopAll();

const median = (/** @type {number[]} */ xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;
const table = markdownTable(
  ["acquire → release pairs", "workerd CPU µs per pair (median)", "all rounds", "÷ the floor's"],
  rows.map((row) => {
    const all = measured.get(row.name) ?? [];
    const floor = median(measured.get(row.floor) ?? []);
    return [row.name, median(all), all.join(" / "), `${(median(all) / floor).toFixed(2)}×`];
  }),
  "lrrr",
);
const command = `node bench/cold-objects.mjs ${process.argv.slice(2).join(" ")}`.trim();
console.log(
  [
    `Command: \`${command}\` at commit ${commitInfo()} (${new Date().toISOString()}); ${PAIRS} pairs per figure over ${COLD} evicted and ${WARM} in-memory objects, listing index ${listingIndex}; machine: ${describeMachine(machineInfo())}; load ${startLoad} at the start, ${endLoad} at the end.`,
    "",
    table,
  ].join("\n"),
);
process.exit(0);
