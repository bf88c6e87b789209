#!/usr/bin/env node
/**
 * `npm run bench:cost`: what one operation costs in the units Cloudflare bills — Worker
 * requests, Durable Object requests, SQLite rows read and written, alarms fired, WebSocket
 * frames, listing deliveries — counted from the server's per-object meter
 * (`npm start --object-meter on`, src/durable/object-meter.ts), never sampled, for each
 * claims, coord and generation operation, beside the floor (bench/floor/worker.js, whose
 * rows its own SQLite cursors report), and priced per million operations with the list
 * prices of bench/scale-model.mjs.
 *
 *   node bench/cost.mjs [--ops=N] [--write-doc]
 *
 * Each operation runs `--ops` times (default 20), one after the other, each on its own
 * claim, scope or generation; between operations the run waits until no object has written
 * a meter line for 2.5 s, so deliveries and forwards an operation caused are counted with
 * it. Counts are divided by the number of operations.
 * Does not: measure CPU or duration (a profile does: docs/performance.md), count alarms
 * written (only those fired), or include storage. `--write-doc` rewrites the `cost` section
 * of docs/performance.md. Not part of `npm test`.
 */
import { parseOptions } from "../src/cli/options.mjs";
import { parseInteger } from "../src/cli/options.mjs";
import { hardLimit, stopAll } from "./cleanup.mjs";
import { startFloor } from "./floor/serve.mjs";
import { expectStatus, makeClient } from "./http.mjs";
import { commitInfo, describeMachine, load1m, machineInfo, markdownTable } from "./report.mjs";
import { countByPhase, parseMeterLine, PRICES } from "./scale-model.mjs";
import { startServer } from "./server.mjs";
import { round } from "./stats.mjs";
import { readFileSync, writeFileSync } from "node:fs";

const { values } = parseOptions(process.argv.slice(2), {
  ops: { type: "string" },
  "write-doc": { type: "boolean" },
});
const N = parseInteger("--ops", values.ops, { min: 1, max: 1_000 }) ?? 20;
hardLimit("bench:cost", 15 * 60_000);

/** @type {import("./scale-model.mjs").MeterLine[]} */
const lines = [];
const server = await startServer("npm-start", {
  serveArgs: "--object-meter on",
  onLine: (line) => {
    const m = parseMeterLine(line);
    if (m !== undefined) lines.push(m);
  },
});
const floor = await startFloor();
const http = await makeClient("dev-token");
const plain = await makeClient();
const enc = encodeURIComponent;
const ns = `cost-${crypto.randomUUID().slice(0, 8)}`;
const base = `${server.url}/v1/ns/${ns}`;
const sleep = (/** @type {number} */ ms) => new Promise((r) => setTimeout(r, ms));

/** Until no meter line for `forMs`. */
async function quiet(forMs = 2_500) {
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
/** @type {Record<string, { rowsRead: number, rowsWritten: number }>} the floor's own row counts */
const floorRows = {};
/** @param {string} name @param {(i: number) => Promise<void>} op */
async function phase(name, op) {
  await quiet();
  const startMs = Date.now();
  for (let i = 0; i < N; i++) await op(i);
  await quiet();
  phases.push({ name, startMs, endMs: Date.now() });
  process.stderr.write(`${name}: done\n`);
}

const claim = (/** @type {number} */ i) => `${base}/claims/c-${i}`;
/** @type {string[]} */
const tokens = [];
await phase("claims acquire, new claim", async (i) => {
  const r = await http.call("POST", `${claim(i)}/acquire`, { generationId: "g", ttlMs: 60_000 });
  tokens[i] = expectStatus(r, 200, "acquire").claim.fencingToken;
});
await phase("claims renew", async (i) => {
  const body = { generationId: "g", token: tokens[i], ttlMs: 60_000 };
  expectStatus(await http.call("POST", `${claim(i)}/renew`, body), 200, "renew");
});
await phase("claims get", async (i) => {
  expectStatus(await http.call("GET", claim(i)), 200, "get");
});
await phase("claims release", async (i) => {
  expectStatus(await http.call("POST", `${claim(i)}/release`, { generationId: "g", token: tokens[i] }), 200, "release");
});
// The same two on objects that exist (their first acquire created their tables above).
await phase("claims acquire, existing claim", async (i) => {
  const r = await http.call("POST", `${claim(i)}/acquire`, { generationId: "g", ttlMs: 60_000 });
  tokens[i] = expectStatus(r, 200, "acquire").claim.fencingToken;
});
await phase("claims release, again", async (i) => {
  expectStatus(await http.call("POST", `${claim(i)}/release`, { generationId: "g", token: tokens[i] }), 200, "release");
});
const scope = (/** @type {number} */ i) => `${base}/volumes/v/stores/s-${i}/leases`;
/** @type {string[]} */
const leases = [];
await phase("coord lease acquire", async (i) => {
  const r = await http.call("POST", scope(i), { participantId: "p", ttlMs: 60_000 });
  leases[i] = `${scope(i)}/${enc(expectStatus(r, 201, "lease").lease.leaseId)}`;
});
await phase("coord publish", async (i) => {
  expectStatus(await http.call("POST", `${leases[i]}/publish`, { root: { i } }), 200, "publish");
});
await phase("coord lease release", async (i) => {
  expectStatus(await http.call("DELETE", /** @type {string} */ (leases[i])), 204, "lease release");
});
await phase("generation register", async (i) => {
  const body = { id: `gen-${i}`, service: "cost", instanceId: `i-${i}` };
  expectStatus(await http.call("POST", `${base}/generations`, body), 200, "register");
});
await phase("generation update", async (i) => {
  expectStatus(await http.call("PATCH", `${base}/generations/gen-${i}`, { state: "standby" }), 200, "update");
});
for (const step of ["acquire", "release"]) {
  floorRows[step] = { rowsRead: 0, rowsWritten: 0 };
  for (let i = 0; i < N; i++) {
    const body = step === "acquire" ? { owner: "o", ttlMs: 60_000 } : { owner: "o", token: 1 };
    const r = await plain.call("POST", `${floor.url}/locks/l-${i}/${step}`, body);
    expectStatus(r, 200, `floor ${step}`);
    const rows = /** @type {{ rows: { read: number, written: number } }} */ (r.body).rows;
    const t = /** @type {{ rowsRead: number, rowsWritten: number }} */ (floorRows[step]);
    t.rowsRead += rows.read;
    t.rowsWritten += rows.written;
  }
}
const load = load1m();
await http.close();
await plain.close();
await stopAll();

/**
 * List price per million operations (Worker request + object requests + rows; CPU and
 * duration not included).
 * @param {{ objectRequests: number, rowsRead: number, rowsWritten: number }} c per operation
 */
const usdPerM = (c) =>
  round(
    PRICES.workerRequestsPerM +
      c.objectRequests * PRICES.objectRequestsPerM +
      c.rowsRead * PRICES.rowsReadPerM +
      c.rowsWritten * PRICES.rowsWrittenPerM,
    3,
  );
const counted = countByPhase(lines, phases);
const rows = phases.map((p) => {
  const objects = [...(counted.get(p.name)?.values() ?? [])];
  const sum = (/** @type {"requests" | "alarms" | "rowsRead" | "rowsWritten" | "frames" | "deliveries"} */ k) =>
    round(objects.reduce((a, c) => a + c[k], 0) / N, 2);
  const c = { objectRequests: sum("requests"), rowsRead: sum("rowsRead"), rowsWritten: sum("rowsWritten") };
  return [
    p.name,
    1,
    c.objectRequests,
    c.rowsRead,
    c.rowsWritten,
    sum("alarms"),
    sum("frames"),
    sum("deliveries"),
    usdPerM(c),
  ];
});
for (const [step, t] of Object.entries(floorRows)) {
  const c = { objectRequests: 1, rowsRead: round(t.rowsRead / N, 2), rowsWritten: round(t.rowsWritten / N, 2) };
  rows.push([`floor ${step}`, 1, 1, c.rowsRead, c.rowsWritten, 0, 0, 0, usdPerM(c)]);
}
const table = markdownTable(
  [
    "operation",
    "Worker requests",
    "object requests",
    "rows read",
    "rows written",
    "alarms fired",
    "frames",
    "index deliveries",
    "USD per million ops",
  ],
  rows,
  "lrrrrrrrr",
);
const command = `npm run bench:cost -- ${process.argv.slice(2).join(" ")}`.replace(/ -- $/, "");
const machine = machineInfo();
const section = [
  `Command: \`${command}\` at commit ${commitInfo()} (${new Date().toISOString()}); ${N} operations each; machine: ${describeMachine(machine)}; load at the end ${load}. Counts do not depend on load.`,
  "",
  table,
].join("\n");
console.log(`\n${section}`);
if (values["write-doc"] === true) {
  const doc = readFileSync("docs/performance.md", "utf8");
  const begin = "<!-- cost:begin -->";
  const end = "<!-- cost:end -->";
  const i = doc.indexOf(begin);
  const j = doc.indexOf(end);
  if (i < 0 || j < 0) throw new Error("docs/performance.md has no cost markers");
  writeFileSync("docs/performance.md", `${doc.slice(0, i + begin.length)}\n${section}\n${doc.slice(j)}`);
  console.log("rewrote the cost section of docs/performance.md");
}
process.exit(0);
