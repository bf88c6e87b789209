#!/usr/bin/env node
/**
 * `npm run bench:ablation`: where one claim mutation's time goes, by removing one part at a
 * time and timing what is left — what a caller waits for, beside the profile's shares
 * (docs/performance.md "Where one mutation's time goes").
 *
 *   TMPDIR=/dev/shm node bench/ablation.mjs [--rounds=8] [--requests=300]
 *   TMPDIR=/dev/shm node bench/ablation.mjs --isolated [--rounds=3] [--objects=200]
 *   … [--variants=name,name]   only these variants (their names in {@link VARIANTS}) beside the unchanged build
 *
 * Each variant is a bundle of this checkout with one part cut out ({@link VARIANTS}: a
 * literal text replacement in one source file, made in a private copy of the sources, never
 * in the checkout) or a run-time switch (`--listing-index off`). Every variant is served at
 * once by its own bench/direct-server.ts (workerd's own socket: the Node front is measured
 * apart, by bench:peers and docs/BENCHMARKS.md). The unchanged build is served twice, so the
 * A/A difference shows the noise.
 * - By default one client sends acquire → release on a held claim, one request at a time,
 *   in interleaved rounds (the order reversed every other round); each row is the median of
 *   the rounds' p50s.
 * - `--isolated`: workerd's CPU per acquire and per release, each on its own claim the
 *   local runtime has evicted (bench:cost's isolated rows), for every variant and for the
 *   floor (bench/floor/worker.js): in each round every target acquires and releases
 *   `--objects` new claims, everything waits until evicted, each target's acquires of them
 *   are measured in turn, everything waits again, then each target's releases. A variant is
 *   a workerd of its own, so a figure is that process's CPU alone (bench/server.mjs
 *   cpuUsPerOp: the listing's work it caused included, its idle CPU subtracted). Each row is
 *   the median of the rounds. ≈ 4 min a round.
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
import { parseChoice, parseInteger, parseOptions } from "../src/cli/options.mjs";
import { hardLimit, stopAll, trackDir } from "./cleanup.mjs";
import { expectStatus, makeClient } from "./http.mjs";
import { claimSteps, floorSteps } from "./locks.mjs";
import { commitInfo, describeMachine, load1m, machineInfo, markdownTable } from "./report.mjs";
import { startFloor } from "./floor/serve.mjs";
import {
  buildBundleIn,
  childPids,
  cpuUsPerOp,
  EVICTED_IDLE_MS,
  groupPids,
  startServer,
  untilEvicted,
} from "./server.mjs";

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
  {
    name: "no-alarm-write",
    what: "without writing the alarm (a lease's deadline, a delivery check)",
    file: "src/durable/alarm-schedule.ts",
    find: "    return this.storage.setAlarm(deadlineMs);",
    replace: "    return Promise.resolve();",
  },
  {
    name: "no-start-count",
    what: "without counting the retained events when a claim object starts",
    file: "src/claims/store.ts",
    find: '      this.retainedEvents = this.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM events").one().n;',
    replace: "      this.retainedEvents = 0;",
  },
  {
    name: "shard-in-memory",
    what: "the listing shard holds accepted entries in memory and answers a delivery once the index applied it (a sketch)",
    file: "src/listing/index-shard.ts",
    find: `  /** Accept one object's delivery; forwarding follows within {@link FORWARD_MS}. */
  async apply(delivery: IndexDelivery): Promise<void> {
    if (this.knownNamespace === undefined && delivery.namespace !== undefined) {
      this.knownNamespace = delivery.namespace;
      this.store.rememberNamespace(delivery.namespace);
    }
    if (delivery.entry !== undefined) this.store.accept(delivery.entry);
    addCounters(this.counters, delivery.counters);
    await this.alarms.ensure(this.clock.nowMs() + FORWARD_MS);
  }`,
    replace: `  // A sketch of the lever, for timing only: accepted entries held in memory, each delivery
  // answered once the index applied the batch that carried it (no pending row, no
  // transaction, no shard alarm; a failed forward fails the deliveries, which retry).
  private held = new Map<string, NonNullable<IndexDelivery["entry"]>>();
  private waiting: { resolve: () => void; reject: (err: unknown) => void }[] = [];
  private timer: ReturnType<typeof setTimeout> | undefined;

  async apply(delivery: IndexDelivery): Promise<void> {
    if (this.knownNamespace === undefined && delivery.namespace !== undefined) {
      this.knownNamespace = delivery.namespace;
      this.store.rememberNamespace(delivery.namespace);
    }
    addCounters(this.counters, delivery.counters);
    const entry = delivery.entry;
    if (entry === undefined) return;
    const key = entry.value.kind + "\\u0000" + entry.value.key;
    const prior = this.held.get(key);
    if (prior === undefined || prior.seq < entry.seq) this.held.set(key, entry);
    const applied = new Promise<void>((resolve, reject) => this.waiting.push({ resolve, reject }));
    this.timer ??= setTimeout(() => {
      this.timer = undefined;
      void this.forwardHeld();
    }, FORWARD_MS);
    await applied;
  }

  private async forwardHeld(): Promise<void> {
    const index = this.env.INDEX.getByName(objectName(this.knownNamespace ?? "", "index"));
    const entries = [...this.held.values()];
    const counters = this.counters;
    const waiting = this.waiting;
    this.held = new Map();
    this.counters = {};
    this.waiting = [];
    try {
      await index.applyBatch({ entries, counters, atMs: this.clock.nowMs() });
    } catch (err) {
      addCounters(this.counters, counters);
      for (const w of waiting) w.reject(err);
      return;
    }
    for (const w of waiting) w.resolve();
    this.meter.add("deliveries");
  }`,
  },
  { name: "unchanged-again", what: "the unchanged build again (A/A: the noise)" },
];

const { values } = parseOptions(process.argv.slice(2), {
  rounds: { type: "string" },
  requests: { type: "string" },
  isolated: { type: "boolean" },
  objects: { type: "string" },
  variants: { type: "string" },
});
/** `--variants a,b`: only the variants of these names; the unchanged build (the baseline) always runs. */
const CHOSEN =
  values.variants === undefined
    ? undefined
    : new Set(
        values.variants.split(",").map((name) =>
          parseChoice(
            "--variants",
            name,
            VARIANTS.map((v) => v.name),
          ),
        ),
      );
const ISOLATED = values.isolated === true;
const ROUNDS = parseInteger("--rounds", values.rounds, { min: 2, max: 40 }) ?? (ISOLATED ? 3 : 8);
const REQUESTS = parseInteger("--requests", values.requests, { min: 20, max: 10_000 }) ?? 300;
const OBJECTS = parseInteger("--objects", values.objects, { min: 20, max: 2_000 }) ?? 200;
/** What an isolated operation may still cause after its answer: a delivery, a shard's forward. */
const SETTLE_MS = 2_500;
/** Every lease's ttl in the isolated rounds: no lease alarm fires inside a later window. */
const ISOLATED_TTL_MS = 600_000;
hardLimit("bench:ablation", (ISOLATED ? 60 : 30) * 60_000);

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
/** @type {{ variant: Variant, url: string, pid: number | undefined, p50s: number[] }[]} */
const served = [];
for (const variant of VARIANTS) {
  // A probe is not an operation on an object: nothing to isolate.
  if (ISOLATED && variant.probe !== undefined) continue;
  if (CHOSEN !== undefined && variant !== VARIANTS[0] && !CHOSEN.has(variant.name)) continue;
  const bundle = buildVariant(variant);
  const server = await startServer("direct", {
    ...(bundle === undefined ? {} : { bundle }),
    ...(variant.listingIndex === undefined ? {} : { listingIndex: variant.listingIndex }),
  });
  served.push({ variant, url: server.url, pid: groupPids(server.pgid, "workerd")[0], p50s: [] });
  process.stderr.write(`serving ${variant.name}\n`);
}

const ns = `ablation-${crypto.randomUUID().slice(0, 8)}`;
const machine = machineInfo();
if (ISOLATED) await isolatedRounds();
else await heldRounds();
await stopAll();
process.exit(0);

/**
 * The default mode: one client, acquire → release on a held claim, one request at a time;
 * each variant's p50 per round, interleaved.
 */
async function heldRounds() {
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
    const claims = claimSteps(http, `${s.url}/v1/ns/${ns}`, 60_000);
    for (let i = 0; i < REQUESTS / 2; i++) {
      for (const step of /** @type {const} */ (["acquire", "release"])) {
        const t = performance.now();
        await claims[step](claimName);
        ms.push(performance.now() - t);
      }
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
  console.log(`\n${describeMachine(machine)}; commit ${commitInfo()}; load at the end ${endLoad}`);
  console.log(
    `${ROUNDS} interleaved rounds of ${REQUESTS} requests (one client, one request at a time), median of the rounds' p50s:\n`,
  );
  console.log(markdownTable(["variant", "ms per request", "vs unchanged", "rounds"], rows, "lrrl"));
}

/**
 * `--isolated`: workerd's CPU per acquire and per release, each on its own object evicted by
 * the local runtime (what bench:cost's isolated rows measure), for every variant and for the
 * floor (bench/floor/worker.js). A round: every target acquires and releases `OBJECTS` fresh
 * claims (their tables created), everything waits until evicted, each target's acquires of
 * those claims are measured in turn, everything waits again, then each target's releases.
 * A variant is its own workerd, so each figure is that process's CPU alone, less its idle.
 */
async function isolatedRounds() {
  const floor = await startFloor();
  const [floorPid] = childPids("workerd");
  const plain = await makeClient();
  /** @typedef {{ label: string, pid: number | undefined, steps: import("./locks.mjs").LockSteps, acquireUs: number[], releaseUs: number[] }} Target */
  /** @type {Target[]} */
  const targets = served.map((s) => ({
    label: s.variant.what,
    pid: s.pid,
    steps: claimSteps(http, `${s.url}/v1/ns/${ns}`, ISOLATED_TTL_MS),
    acquireUs: [],
    releaseUs: [],
  }));
  targets.push({
    label: "the floor (bench/floor/worker.js)",
    pid: floorPid,
    steps: floorSteps(plain, floor.url, ISOLATED_TTL_MS),
    acquireUs: [],
    releaseUs: [],
  });
  for (const t of targets) if (t.pid === undefined) throw new Error(`no workerd process found for ${t.label}`);
  const startLoad = load1m();
  for (let r = 0; r < ROUNDS; r++) {
    const key = (/** @type {number} */ i) => `r${r}-${i}`;
    for (const t of targets) {
      for (let i = 0; i < OBJECTS; i++) {
        await t.steps.acquire(key(i));
        await t.steps.release(key(i));
      }
    }
    const order = r % 2 === 0 ? targets : [...targets].reverse();
    for (const step of /** @type {const} */ (["acquire", "release"])) {
      await untilEvicted();
      for (const t of order) {
        const us = await cpuUsPerOp(/** @type {number} */ (t.pid), (i) => t.steps[step](key(i)), OBJECTS, SETTLE_MS);
        t[`${step}Us`].push(us);
        process.stderr.write(`round ${r + 1}, ${step}: ${t.label}: ${us} µs\n`);
      }
    }
  }
  await plain.close();

  const endLoad = load1m();
  const [unchanged] = targets;
  const floorTarget = targets[targets.length - 1];
  if (unchanged === undefined || floorTarget === undefined) throw new Error("nothing measured");
  const base = { acquire: median(unchanged.acquireUs), release: median(unchanged.releaseUs) };
  const floorUs = { acquire: median(floorTarget.acquireUs), release: median(floorTarget.releaseUs) };
  const rows = targets.map((t) => {
    const acquire = median(t.acquireUs);
    const release = median(t.releaseUs);
    const vs = (/** @type {number} */ x, /** @type {number} */ b) => (t === unchanged ? "—" : String(x - b));
    return [
      t.label,
      String(acquire),
      vs(acquire, base.acquire),
      `${(acquire / floorUs.acquire).toFixed(2)}×`,
      String(release),
      vs(release, base.release),
      `${(release / floorUs.release).toFixed(2)}×`,
      t.acquireUs.join(" ") + " / " + t.releaseUs.join(" "),
    ];
  });
  console.log(
    `\n${describeMachine(machine)}; commit ${commitInfo()}; load ${startLoad} at the start, ${endLoad} at the end`,
  );
  console.log(
    `${ROUNDS} interleaved rounds; each figure workerd's CPU per operation over ${OBJECTS} objects evicted ` +
      `before it (${EVICTED_IDLE_MS / 1_000} s idle), the listing's work it caused included; median of the rounds:\n`,
  );
  console.log(
    markdownTable(
      [
        "variant",
        "acquire µs",
        "vs unchanged",
        "÷ floor",
        "release µs",
        "vs unchanged",
        "÷ floor",
        "rounds (acquire / release)",
      ],
      rows,
      "lrrrrrrl",
    ),
  );
}
