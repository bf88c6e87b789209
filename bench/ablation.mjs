#!/usr/bin/env node
/**
 * `npm run bench:ablation`: where one claim mutation's time goes, by removing one part at a
 * time and timing what is left — what a caller waits for, beside the profile's shares
 * (docs/performance.md "Where one mutation's time goes").
 *
 *   TMPDIR=/dev/shm node bench/ablation.mjs [--rounds=8] [--requests=300]
 *
 * Each variant is a bundle of this checkout with one part cut out ({@link VARIANTS}: a
 * literal text replacement in one source file, made in a private copy of the sources, never
 * in the checkout) or a run-time switch (`--listing-index off`). Every variant is served at
 * once by its own bench/direct-server.ts (workerd's own socket: the Node front is measured
 * apart, by bench:peers and docs/BENCHMARKS.md), and one client sends acquire → release on a
 * held claim, one request at a time, in interleaved rounds (the order reversed every other
 * round); each row is the median of the rounds' p50s. The unchanged build is served twice,
 * so the A/A difference shows the noise.
 *
 * Guarantees: a replacement that no longer matches its source fails the run before anything
 * is measured (a variant never silently measures the unchanged code); every reply's status
 * is checked; servers stop and temporary directories are removed on exit. Does not: ship
 * or test any variant (they exist only to be timed), or make a figure taken on a loaded
 * machine honest (the load is printed). Not part of `npm test`.
 */
import { cpSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseInteger, parseOptions } from "../src/cli/options.mjs";
import { hardLimit, stopAll, trackDir } from "./cleanup.mjs";
import { expectStatus, makeClient } from "./http.mjs";
import { commitInfo, describeMachine, load1m, machineInfo, markdownTable } from "./report.mjs";
import { buildBundleIn, startServer } from "./server.mjs";

/**
 * @typedef {{ name: string, what: string, file?: string, find?: string, replace?: string,
 *   listingIndex?: "on" | "off", probe?: "healthz" }} Variant
 */

/** @type {Variant[]} */
const VARIANTS = [
  { name: "unchanged", what: "the unchanged build" },
  {
    name: "healthz",
    what: "`GET /healthz` on the same build (the Worker, no authentication, no object)",
    probe: "healthz",
  },
  {
    name: "worker-only",
    what: "the Worker path only: authentication, route, validation, log line, answer; no object call",
    file: "src/http/claims.ts",
    find: "claimStub(c, params.ns, params.claim).command(params.claim, { op: mutation, body } as ClaimRequest),",
    replace: `void c || void body || { status: 200, body: { claim: { name: params.claim, fencingToken: "1" } } },`,
  },
  {
    name: "object-noop",
    what: "+ the RPC to a claim object that answers at once",
    file: "src/claims/claim-object.ts",
    find: "async command(name: string, request: ClaimRequest): Promise<WireResponse> {",
    replace:
      "async command(name: string, request: ClaimRequest): Promise<WireResponse> {\n" +
      '    if (request.op !== "get") return { status: 200, body: { claim: { name, fencingToken: "1" } } };',
  },
  {
    name: "no-log",
    what: "without the log line",
    file: "src/http/request-log.ts",
    find: "  console.log(JSON.stringify(line));",
    replace: "  void line;",
  },
  {
    name: "no-events",
    what: "without the claim's event rows (its history)",
    file: "src/claims/store.ts",
    find:
      "      for (const event of step.events) this.appendEvent(event);\n" +
      "      const count = this.pruneEvents(this.retainedEvents + step.events.length);",
    replace: "      void step.events;\n      const count = this.retainedEvents;",
  },
  { name: "no-listing", what: "without the listing index (`--listing-index off`)", listingIndex: "off" },
  {
    name: "zod-twice",
    what: "zod run twice (its cost shows as the difference)",
    file: "src/http/body.ts",
    find: '  const parsed = schema.safeParse(value);\n  if (!parsed.success) throw invalidFromZod(parsed.error, "body");',
    replace:
      '  schema.safeParse(value);\n  const parsed = schema.safeParse(value);\n  if (!parsed.success) throw invalidFromZod(parsed.error, "body");',
  },
  { name: "unchanged-again", what: "the unchanged build again (A/A: the noise)" },
];

const { values } = parseOptions(process.argv.slice(2), {
  rounds: { type: "string" },
  requests: { type: "string" },
});
const ROUNDS = parseInteger("--rounds", values.rounds, { min: 2, max: 40 }) ?? 8;
const REQUESTS = parseInteger("--requests", values.requests, { min: 20, max: 10_000 }) ?? 300;
hardLimit("bench:ablation", 30 * 60_000);

/**
 * The bundle of this checkout with `variant`'s replacement made in a private copy of the
 * sources (built as bench/server.mjs builds the checkout), or undefined for no change.
 * @param {Variant} variant
 * @returns {string | undefined} the directory holding index.js
 */
function buildVariant(variant) {
  if (variant.file === undefined || variant.find === undefined || variant.replace === undefined) return undefined;
  const copy = mkdtempSync(join(tmpdir(), "shiftlock-ablation-src-"));
  trackDir(copy);
  for (const entry of ["src", "package.json", "wrangler.toml", "tsconfig.json"])
    cpSync(entry, join(copy, entry), { recursive: true });
  symlinkSync(resolve("node_modules"), join(copy, "node_modules"));
  const path = join(copy, variant.file);
  const source = readFileSync(path, "utf8");
  if (source.split(variant.find).length !== 2) {
    throw new Error(`ablation ${variant.name}: its text no longer occurs exactly once in ${variant.file}`);
  }
  writeFileSync(path, source.replace(variant.find, variant.replace));
  return buildBundleIn(copy);
}

/** @param {number[]} xs */
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;

const http = await makeClient("dev-token");
/** @type {{ variant: Variant, url: string, p50s: number[] }[]} */
const served = [];
for (const variant of VARIANTS) {
  const bundle = buildVariant(variant);
  const server = await startServer("direct", {
    ...(bundle === undefined ? {} : { bundle }),
    ...(variant.listingIndex === undefined ? {} : { listingIndex: variant.listingIndex }),
  });
  served.push({ variant, url: server.url, p50s: [] });
  process.stderr.write(`serving ${variant.name}\n`);
}

const ns = `ablation-${crypto.randomUUID().slice(0, 8)}`;
/**
 * One round of `REQUESTS` requests against one variant: its p50 in ms.
 * @param {{ variant: Variant, url: string }} s
 * @param {string} claimName
 */
async function round(s, claimName) {
  /** @type {number[]} */
  const ms = [];
  if (s.variant.probe === "healthz") {
    for (let i = 0; i < REQUESTS; i++) {
      const t = performance.now();
      expectStatus(await http.call("GET", `${s.url}/healthz`), 200, "healthz");
      ms.push(performance.now() - t);
    }
    return median(ms);
  }
  const base = `${s.url}/v1/ns/${ns}/claims/${claimName}`;
  for (let i = 0; i < REQUESTS / 2; i++) {
    let t = performance.now();
    const acquired = expectStatus(
      await http.call("POST", `${base}/acquire`, { generationId: "g", ttlMs: 60_000 }),
      200,
      "acquire",
    );
    ms.push(performance.now() - t);
    t = performance.now();
    const token = acquired.claim.fencingToken;
    expectStatus(await http.call("POST", `${base}/release`, { generationId: "g", token }), 200, "release");
    ms.push(performance.now() - t);
  }
  return median(ms);
}

for (const s of served) await round(s, "warm-up");
for (let r = 0; r < ROUNDS; r++) {
  for (const s of r % 2 === 0 ? served : [...served].reverse()) s.p50s.push(await round(s, `c${r}`));
}

const endLoad = load1m();
const baseline = median(served[0]?.p50s ?? []);
const rows = served.map((s) => {
  const m = median(s.p50s);
  return [
    s.variant.what,
    m.toFixed(3),
    s === served[0] ? "—" : (m - baseline).toFixed(3),
    s.p50s.map((x) => x.toFixed(2)).join(" "),
  ];
});
const machine = machineInfo();
console.log(`\n${describeMachine(machine)}; commit ${commitInfo()}; load at the end ${endLoad}`);
console.log(
  `${ROUNDS} interleaved rounds of ${REQUESTS} requests (one client, one request at a time), median of the rounds' p50s:\n`,
);
console.log(markdownTable(["variant", "ms per request", "vs unchanged", "rounds"], rows, "lrrl"));
await stopAll();
process.exit(0);
