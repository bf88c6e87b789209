/**
 * `npm run bench:scale`: the scale model (docs/scale.md). Against its own `npm start` server
 * (free port, fresh state, `--object-meter on`) it runs one namespace through four phases —
 * a large listing, steady renewals and keepalives, a hand-over of every claim to a second
 * generation, and idle — and counts, from the server's per-object meter lines (never
 * sampled), the requests, alarms, rows, listing deliveries, WebSocket frames and busy time
 * of every Durable Object per phase. It prints a table per phase, a projection to 100,000 and
 * 1,000,000 claims (ttl 15 s, renew every 5 s, hand-over of all claims in 60 s) priced with
 * Cloudflare's list prices, and, last, one JSON line.
 *
 * The steady claims are held by the handoff runtime, as a service holds them: one
 * `GenerationSession` ("g1") acquires every claim and renews it at ttl/3, and the hand-over
 * is its `handoffTo("g2")` (docs/handoff.md: prepare every claim, then commit every claim,
 * through the batch route, and the generations' state changes). Runs under tsx (it imports
 * the client's TypeScript).
 */
import { setTimeout as sleep } from "node:timers/promises";
import WebSocket from "ws";
import { exitOnUncaught, hardLimit, stopAllAndExit } from "./cleanup.mjs";
import { expectStatus, makeClient } from "./http.mjs";
import {
  PRICES,
  countByPhase,
  kindOf,
  parseMeterLine,
  projectPhase,
  projectRenewals,
  summarize,
} from "./scale-model.mjs";
import { SESSION_OPTIONS, SESSION_USAGE, runSessionWorkload, sessionSettings } from "./scale-sessions.mjs";
import { reportSessions } from "./scale-sessions-report.mjs";
import { startServer } from "./server.mjs";
import { parseInteger, parseOptions } from "../src/cli/options.mjs";
import { GenerationSession, HttpClaimsBackend } from "../src/client/index.ts";

/** What the run is doing, named when it fails. */
let stage = "start";
// Any failure ends the run with one line naming it, never a stack (and stops the server).
const fail = exitOnUncaught("bench:scale", () => stage);

const USAGE = `usage: npm run bench:scale -- [--listing-entries N] [--claims N] [--ttl-ms MS] [--scopes M]
  [--steady-s S] [--idle-s S] [--shards N] ${SESSION_USAGE}`;
const { values } = parseOptions(process.argv.slice(2), {
  "listing-entries": { type: "string", default: "20000" },
  claims: { type: "string", default: "2000" },
  "ttl-ms": { type: "string", default: "30000" },
  scopes: { type: "string", default: "20" },
  "steady-s": { type: "string", default: "30" },
  "idle-s": { type: "string", default: "120" },
  shards: { type: "string", default: "16" },
  ...SESSION_OPTIONS,
  help: { type: "boolean" },
});
if (values.help) {
  console.log(USAGE);
  process.exit(0);
}
/** An integer option that has a default, so it is always set. */
const int = (
  /** @type {string} */ label,
  /** @type {string | undefined} */ text,
  /** @type {{ min?: number, max?: number }} */ range,
) => /** @type {number} */ (parseInteger(label, text, range));
const listingEntries = int("--listing-entries", values["listing-entries"], { min: 0 });
const claims = int("--claims", values.claims, { min: 1 });
const ttlMs = int("--ttl-ms", values["ttl-ms"], { min: 1000 });
const scopes = int("--scopes", values.scopes, { min: 0 });
const steadyS = int("--steady-s", values["steady-s"], { min: 1 });
const idleS = int("--idle-s", values["idle-s"], { min: 1 });
const shards = int("--shards", values.shards, { min: 1, max: 1024 });
const sessionsSettings = sessionSettings(values);
/** The run's hard limit. */
const RUN_LIMIT_MS = 3_600_000;
hardLimit("bench:scale", RUN_LIMIT_MS);

const NS = "scale";
const BATCH = 128;
/** @type {import("./scale-model.mjs").MeterLine[]} */
const lines = [];
/** The listing's work (deliveries, shards, the index), apart from the renewals and keepalives. */
const isListingWork = (/** @type {import("./scale-model.mjs").MeterLine} */ l) => {
  const kind = kindOf(l.obj);
  return l.op === "delivery" || kind === "index" || kind === "index-shard";
};
/** How many of `lines` are the listing's work, counted as they arrive ({@link quiet} polls it). */
let listingLines = 0;
const server = await startServer("npm-start", {
  serveArgs: `--object-meter on --listing-shards ${shards} --lease-notice-ttls ${sessionsSettings.noticeTtls}`,
  onLine: (line) => {
    const m = parseMeterLine(line);
    if (m === undefined) return;
    lines.push(m);
    if (isListingWork(m)) listingLines++;
  },
});
const client = await makeClient("dev-token");
const base = `${server.url}/v1/ns/${NS}`;
/** Worker requests made by this bench, by phase. */
let workerRequests = 0;
const call = async (
  /** @type {string} */ method,
  /** @type {string} */ url,
  /** @type {unknown} */ body = undefined,
) => {
  workerRequests++;
  return client.call(method, url, body);
};
/** The runtime's client: its requests are Worker requests too. */
const backend = new HttpClaimsBackend({
  baseUrl: server.url,
  token: "dev-token",
  namespace: NS,
  WebSocket: /** @type {any} */ (WebSocket),
  fetch: (/** @type {Parameters<typeof fetch>} */ ...args) => {
    workerRequests++;
    return fetch(...args);
  },
});
/** @type {import("./scale-model.mjs").Phase[]} */
const phases = [];
/** @type {Record<string, number>} */
const workerRequestsByPhase = {};
async function phase(/** @type {string} */ name, /** @type {() => Promise<void>} */ run) {
  stage = `phase ${name}`;
  const startMs = Date.now();
  const before = workerRequests;
  await run();
  phases.push({ name, startMs, endMs: Date.now() });
  workerRequestsByPhase[name] = workerRequests - before;
  console.error(`phase ${name}: ${((Date.now() - startMs) / 1000).toFixed(1)} s`);
}

/** @typedef {{ status: number, body: { claim: { fencingToken: string } } }} OpResult */

/**
 * Wait until no object has done anything for `forMs` (no meter line), at most `maxMs`: the
 * deliveries, safety alarms and forwards a phase caused have run. With `onlyListing`, only
 * the listing's work counts (deliveries, shards, the index): the renewals and keepalives
 * that go on while claims and leases are held, and their objects' alarms, do not.
 */
async function quiet(forMs = 2_500, maxMs = 120_000, onlyListing = false) {
  // Counted as the lines arrive: filtering every line so far at each poll cost the bench
  // 50-90 ms of CPU per 250 ms after a full-size listing (190,000 lines), beside the
  // renewals and keepalives it sends meanwhile.
  const counts = () => (onlyListing ? listingLines : lines.length);
  const until = Date.now() + maxMs;
  let seen = counts();
  let since = Date.now();
  while (Date.now() < until) {
    await sleep(250);
    const now = counts();
    if (now !== seen) {
      seen = now;
      since = Date.now();
    } else if (Date.now() - since >= forMs) return;
  }
  throw new Error("the server never went quiet");
}

/**
 * A request that may be repeated (docs/protocol.md: a keepalive, ops that carry an
 * operationId), sent again when its answer was lost, as the client's retry rule would: no
 * answer at all (a connection reset under load), or 502/503 from the local front (its
 * connection to workerd was reset). At most 5 attempts, 250 ms × attempt apart; `repeated`
 * counts the repeats, which the run says.
 * @param {string} method
 * @param {string} url
 * @param {unknown} body
 * @param {() => void} repeated
 * @returns {Promise<import("./http.mjs").Reply>}
 */
async function callRepeatable(method, url, body, repeated) {
  for (let attempt = 1; ; attempt++) {
    const reply = await call(method, url, body).catch((/** @type {unknown} */ err) => {
      if (attempt === 5) throw err;
      return undefined;
    });
    if (reply !== undefined && ((reply.status !== 502 && reply.status !== 503) || attempt === 5)) return reply;
    repeated();
    await sleep(250 * attempt);
  }
}

/**
 * Run `ops` through the batch route, 128 at a time, `parallel` batches at once. Every op
 * carries an operationId, so a batch whose answer was lost is sent again safely
 * ({@link callRepeatable}): each op replays its first answer.
 * @returns {Promise<OpResult[]>}
 */
async function batches(/** @type {object[]} */ ops, parallel = 4) {
  /** @type {object[][]} */
  const chunks = [];
  const withIds = ops.map((op) => ({ operationId: `scale-${crypto.randomUUID()}`, ...op }));
  for (let i = 0; i < withIds.length; i += BATCH) chunks.push(withIds.slice(i, i + BATCH));
  let next = 0;
  /** @type {OpResult[][]} */
  const results = [];
  await Promise.all(
    Array.from({ length: parallel }, async () => {
      while (next < chunks.length) {
        const i = next++;
        const reply = await callRepeatable("POST", `${base}/batch`, { ops: chunks[i] }, () => void batchRetries++);
        if (reply.status !== 200) throw new Error(`batch: ${reply.status} ${JSON.stringify(reply.body)}`);
        results[i] = /** @type {{ results: OpResult[] }} */ (reply.body).results;
      }
    }),
  );
  return results.flat();
}

const pad = (/** @type {number} */ i) => String(i).padStart(7, "0");
const steadyNames = Array.from({ length: claims }, (_, i) => `job-${pad(i)}`);
/** @type {Map<string, string>} claim → token held by g1 */
const tokens = new Map();
/** @type {WebSocket[]} */
const watchers = [];
/** @type {Promise<unknown>[]} */
const waiters = [];
/** @type {{ url: string, leaseId: string }[]} */
const holders = [];
let renewals = 0;
/** Acquires repeated after a failed attempt (a reset connection under load). */
let acquireRetries = 0;
/** Batches sent again after a lost answer. */
let batchRetries = 0;
/** Keepalives sent again after a lost answer. */
let keepaliveRetries = 0;
let keepalives = 0;
/** @type {Record<string, number>} the most rows a listing page read, by query */
const pageRows = {};

/**
 * Claims the listing phase touches before it lets the local runtime close them: workerd keeps
 * every object it served open until it has been idle for some seconds, and a few thousand
 * open SQLite objects at once exhaust its SQLite memory (SQLITE_NOMEM: every call then
 * fails). Deployed, each object lives on its own; this is the local runtime's limit.
 */
const LISTING_WAVE = 2_000;
/** How long a wave's objects are left idle, so that the runtime closes them. */
const LISTING_WAVE_REST_MS = 15_000;
/**
 * The listing's claims are held from their acquire to their release only, but under load a
 * wave of acquires outlasts a ttl of 30 s: its claims then expire before their release, in
 * a burst of expiry alarms of which the local runtime failed some (128–384 of 2,000 at a
 * load average of 10–14, each `alarm-scheduler.c++:202 … expected classAndId…` on workerd's
 * stderr), and the listing never heard of those claims' expiry: "the listing did not catch
 * up". With this ttl none expires within the run: their alarms are the listing's delivery
 * checks alone (src/durable/index-outbox.ts).
 */
const LISTING_TTL_MS = RUN_LIMIT_MS;

await phase("listing", async () => {
  const names = Array.from({ length: listingEntries }, (_, i) => `old-${pad(i)}`);
  for (let start = 0; start < names.length; start += LISTING_WAVE) {
    const wave = names.slice(start, start + LISTING_WAVE);
    const acquired = await batches(
      wave.map((claim) => ({ op: "acquire", claim, generationId: "g0", ttlMs: LISTING_TTL_MS })),
    );
    const released = await batches(wave.map((claim) => ({ op: "release", claim, generationId: "g0", token: "1" })));
    const failed = [...acquired, ...released].filter((r) => r.status !== 200);
    if (failed.length > 0) throw new Error(`listing: ${failed.length} ops failed, e.g. ${JSON.stringify(failed[0])}`);
    // The last wave rests too: the setup's claims must not find its objects still open.
    await sleep(LISTING_WAVE_REST_MS);
  }
});

/** Counting the keepalives the loops make (steady phase only). */
let countKeepalives = false;
/** Set when the holders' keepalive loops are to stop. */
let keepalivesStopped = false;
/** @type {Promise<void>[]} one per holder */
const keepaliveLoops = [];
/**
 * Keep a holder's lease alive every ttl/3 from its grant until stopped. Each loop starts at
 * its own grant, not when the setup ends: on a loaded machine the rest of the setup (the
 * other scopes' grants, waiters and watchers) outlasted the ttl, and the first keepalive
 * found the lease lost. One loop per holder: a slow answer delays no other lease.
 * @param {{ url: string, leaseId: string }} h
 */
async function keepAlive(h) {
  const periodMs = ttlMs / 3;
  for (;;) {
    await sleep(periodMs);
    if (keepalivesStopped) return;
    if (countKeepalives) keepalives++;
    const url = `${h.url}/leases/${h.leaseId}/keepalive`;
    const r = await callRepeatable("POST", url, { ttlMs }, () => void keepaliveRetries++);
    if (r.status !== 200) throw new Error(`keepalive ${h.url}: ${r.status} ${JSON.stringify(r.body)}`);
  }
}

/** @type {GenerationSession} */
let owner;
await phase("setup", async () => {
  owner = await GenerationSession.open({
    service: "scale",
    instanceId: "a",
    backend,
    generationId: "g1",
    leaseTtlMs: ttlMs,
    // The per-claim renewals this workload prices (the sessions workload binds its claims).
    bound: false,
  });
  owner.on("claim.renewed", () => void renewals++);
  // A lost claim ends the run where it happens: every later count would be of fewer claims
  // (on a loaded machine, renewals answered later than the ttl allows).
  owner.on("claim.lost", ({ claim, error }) => fail(new Error(`claim ${claim} lost: ${error.message}`)));
  const handles = steadyNames.map((name) => owner.claim(name));
  let next = 0;
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (next < handles.length) {
        const handle = /** @type {import("../src/client/index.ts").ClaimHandle} */ (handles[next++]);
        // A local server under load may reset a connection; acquiring again as the same
        // generation is safe (an extension of its own hold). Counted, and said.
        for (let attempt = 1; ; attempt++) {
          try {
            await handle.tryAcquire();
            break;
          } catch (err) {
            if (attempt === 5) throw err;
            acquireRetries++;
          }
        }
      }
    }),
  );

  for (let s = 0; s < scopes; s++) {
    const url = `${base}/volumes/vol-${s % 4}/stores/store-${s}`;
    const lease = expectStatus(
      await call("POST", `${url}/leases`, { participantId: `holder-${s}`, ttlMs }),
      201,
      `lease ${url}`,
    );
    const holder = { url, leaseId: lease.lease.leaseId };
    holders.push(holder);
    keepaliveLoops.push(keepAlive(holder));
    // A waiter that queues for the whole phase, and a watcher.
    waiters.push(
      call("POST", `${url}/leases`, {
        participantId: `waiter-${s}`,
        ttlMs,
        waitMs: (steadyS + 30) * 1000,
        waiterId: `w-${s}-${crypto.randomUUID()}`,
      }),
    );
    const ws = new WebSocket(`${url.replace("http", "ws")}/watch`, { headers: { authorization: "Bearer dev-token" } });
    ws.on("message", () => undefined);
    // A watcher that fails (its handshake refused, its connection broken) fails the run: the
    // phases would count fewer frames than they say.
    ws.on("error", (err) => fail(new Error(`watcher of ${url}: ${err.message}`)));
    watchers.push(ws);
  }
});
// Let the setup's deliveries, queued waiters and forwards settle, so steady counts renewals alone.
await quiet(2_500, 120_000, true);
if (acquireRetries > 0) console.error(`setup: ${acquireRetries} acquires repeated after a failed attempt`);

await phase("steady", async () => {
  // The runtime renews every claim at ttl/3 by itself, and the holders' keepalive loop runs
  // since they were granted: the phase counts both.
  countKeepalives = true;
  await sleep(steadyS * 1000);
  countKeepalives = false;
});
keepalivesStopped = true;
await Promise.all(keepaliveLoops);

let handoffS = 0;
await phase("handoff", async () => {
  const started = Date.now();
  // The successor is another deployment (its own process): here it only registers.
  const successor = await GenerationSession.open({
    service: "scale",
    instanceId: "b",
    backend,
    generationId: "g2",
    leaseTtlMs: ttlMs,
    bound: false,
  });
  const result = await owner.handoffTo(successor.generationId);
  if (result.claims.length !== claims) throw new Error(`handed over ${result.claims.length} of ${claims} claims`);
  for (const c of result.claims) tokens.set(c.claim, c.token.toString());
  handoffS = (Date.now() - started) / 1000;
  await successor.close({ release: false });
  // The phase includes the deliveries and forwards the hand-over caused.
  await quiet();
});

// Release everything, end every lease and wait, close every watcher; wait until the listing caught up.
stage = "the release of everything";
const releasedAll = await batches(
  steadyNames.map((claim) => ({ op: "release", claim, generationId: "g2", token: tokens.get(claim) })),
);
if (releasedAll.some((r) => r.status !== 200)) throw new Error("releasing the handed-over claims failed");
for (const h of holders) await call("DELETE", `${h.url}/leases/${h.leaseId}`);
for (const ws of watchers) ws.close(1000);
await releaseGrantedWaiters();
const caughtUpBy = Date.now() + 30_000;
for (;;) {
  const stats = /** @type {any} */ (expectStatus(await call("GET", `${base}/stats`), 200, "stats"));
  if (stats.claimsByPhase.owned === 0 && stats.claimsByPhase.reserved === 0) break;
  if (Date.now() > caughtUpBy) throw new Error(`the listing did not catch up: ${JSON.stringify(stats.claimsByPhase)}`);
  await sleep(250);
}
// Listing pages, every list with and without each filter, after the namespace is large.
for (const [list, query] of [
  ["claims", ""],
  ["claims", "phase=owned"],
  ["claims", "owner=g2"],
  ["claims", "phase=unowned&owner=g2"],
  ["claims", "prefix=job-000"],
  ["generations", ""],
  ["generations", "state=active"],
  ["scopes", ""],
  ["scopes", "volumeId=vol-1"],
]) {
  await call("GET", `${base}/${list}?limit=100&${query}`);
}
// The last alarms (deliveries' safety nets, shard forwards) run before idle starts.
await quiet();

await phase("idle", async () => {
  await sleep(idleS * 1000);
});

stage = "the sessions";
// Bound claims under generations' leases (bench/scale-sessions.mjs), after the idle phase.
const sessionRun =
  sessionsSettings.generations === 0
    ? undefined
    : await runSessionWorkload({
        serverUrl: server.url,
        token: "dev-token",
        client,
        lines,
        settings: sessionsSettings,
        shards,
      });
stage = "the report";

/** Grants a waiter received when its holder left: end them too. */
async function releaseGrantedWaiters() {
  for (const reply of await Promise.all(waiters)) {
    const lease = /** @type {{ body?: { lease?: { leaseId: string, participantId: string } } }} */ (reply).body?.lease;
    if (lease === undefined) continue;
    const holder = holders.find((h) => h.url.endsWith(`store-${lease.participantId.slice("waiter-".length)}`));
    if (holder !== undefined) await call("DELETE", `${holder.url}/leases/${lease.leaseId}`);
  }
}

if (acquireRetries + batchRetries + keepaliveRetries > 0) {
  console.error(
    `repeated after a lost answer: ${acquireRetries} acquires, ${batchRetries} batches, ${keepaliveRetries} keepalives (no answer, or 502/503 from the local front)`,
  );
}
const byPhase = countByPhase(lines, phases);
const secondsOf = (/** @type {string} */ name) => {
  const p = /** @type {import("./scale-model.mjs").Phase} */ (phases.find((x) => x.name === name));
  return (p.endMs - p.startMs) / 1000;
};
for (const line of lines) {
  if (line.op === "page") pageRows[line.obj] = Math.max(pageRows[line.obj] ?? 0, line.rowsRead);
}
const listingRowsReadPerPageMax = Math.max(0, ...Object.values(pageRows));
/** @type {Record<string, ReturnType<typeof summarize>>} */
const summaries = {};
for (const p of phases) {
  const s = summarize(/** @type {Map<string, any>} */ (byPhase.get(p.name)), secondsOf(p.name));
  summaries[p.name] = s;
  console.log(`\n## ${p.name} (${secondsOf(p.name).toFixed(1)} s, ${workerRequestsByPhase[p.name]} Worker requests)`);
  console.log(
    `busiest object: ${s.busiest.obj || "none"} (${s.busiest.kind || "-"}) ${s.busiest.reqPerS.toFixed(1)} req/s`,
  );
  console.log("| kind | objects | requests | alarms | rows read | rows written | deliveries | frames | busy s |");
  console.log("|---|---:|---:|---:|---:|---:|---:|---:|---:|");
  for (const [kind, k] of Object.entries(s.byKind)) {
    console.log(
      `| ${kind} | ${k.objects} | ${k.requests} | ${k.alarms} | ${k.rowsRead} | ${k.rowsWritten} | ${k.deliveries} | ${k.frames} | ${k.busyS.toFixed(1)} |`,
    );
  }
}

const steady = /** @type {ReturnType<typeof summarize>} */ (summaries["steady"]);
const handoff = /** @type {ReturnType<typeof summarize>} */ (summaries["handoff"]);
const idle = /** @type {ReturnType<typeof summarize>} */ (summaries["idle"]);
const claimDeliveriesSteady = steady.byKind["claim"]?.deliveries ?? 0;
const scopeDeliveriesSteady = steady.byKind["scope"]?.deliveries ?? 0;
const idleAlarms = Object.values(idle.byKind).reduce((a, k) => a + k.alarms, 0);
const idleRequests = Object.values(idle.byKind).reduce((a, k) => a + k.requests, 0);

/** Project to `n` claims: ttl 15 s (renew every 5 s), hand-over of all claims in 60 s. */
function project(/** @type {number} */ n, /** @type {number} */ shardsProjected) {
  const renewPerSMeasured = renewals / secondsOf("steady");
  const renewPerSProjected = n / 5;
  const perClaimSteady = ttlMs / 3 / 5_000; // each claim renews this much more often
  const common = { forwardWindowS: 0.5, shardsMeasured: shards, shardsProjected };
  const steadyP = projectPhase(steady, {
    ...common,
    seconds: secondsOf("steady"),
    opsPerS: renewPerSMeasured,
    opsPerSProjected: renewPerSProjected,
    perObjectFactor: perClaimSteady,
  });
  const handoffP = projectPhase(handoff, {
    ...common,
    seconds: secondsOf("handoff"),
    opsPerS: claims / secondsOf("handoff"),
    opsPerSProjected: n / 60,
    // A claim sees its prepare and commit within the hand-over, wherever it takes 60 s or 2.
    perObjectFactor: secondsOf("handoff") / 60,
  });
  const idleP = projectPhase(idle, {
    ...common,
    seconds: secondsOf("idle"),
    opsPerS: 1,
    opsPerSProjected: 1,
    perObjectFactor: 1,
  });
  // Price the steady state: per renew, the Worker request and the claim's requests, rows (alarm writes too) and busy time (measured).
  const renewalsP = projectRenewals(steady, {
    renewals,
    targetClaims: n,
    renewEveryS: 5,
    perObjectFactor: perClaimSteady,
  });
  return {
    shards: shardsProjected,
    busiestReqPerS: {
      steady: round(steadyP.busiestReqPerS),
      handoff: round(handoffP.busiestReqPerS),
      idle: round(idleP.busiestReqPerS),
    },
    busiestKind: { steady: steadyP.busiestKind, handoff: handoffP.busiestKind, idle: idleP.busiestKind },
    usdPerMonth: Math.round(renewalsP.usdPerMonth),
    renewals: renewalsP,
  };
}
const round = (/** @type {number} */ x) => Math.round(x * 10) / 10;
const p100k = project(100_000, 32);
const p1m = project(1_000_000, 256);
console.log(
  "\n## projection (ttl 15 s, renew every 5 s, hand-over of all claims in 60 s; list prices: " +
    JSON.stringify(PRICES) +
    ")",
);
console.log(
  `100,000 claims, ${p100k.shards} shards: busiest req/s ${JSON.stringify(p100k.busiestReqPerS)} (${JSON.stringify(p100k.busiestKind)}), ≈ $${p100k.usdPerMonth}/month`,
);
console.log(
  `1,000,000 claims, ${p1m.shards} shards: busiest req/s ${JSON.stringify(p1m.busiestReqPerS)} (${JSON.stringify(p1m.busiestKind)}), ≈ $${p1m.usdPerMonth}/month`,
);

const sessions = sessionRun === undefined ? null : reportSessions(sessionRun, p100k.renewals);
console.log(
  JSON.stringify({
    claims,
    listingEntries,
    busiestReqPerS: {
      steady: round(steady.busiest.reqPerS),
      handoff: round(handoff.busiest.reqPerS),
      idle: round(idle.busiest.reqPerS),
    },
    handoffS: round(handoffS),
    projected100k: { busiestReqPerS: p100k.busiestReqPerS, usdPerMonth: p100k.usdPerMonth },
    projected1M: { busiestReqPerS: p1m.busiestReqPerS, usdPerMonth: p1m.usdPerMonth },
    indexDeliveriesPerRenew: renewals === 0 ? 0 : claimDeliveriesSteady / renewals,
    indexDeliveriesPerKeepalive: keepalives === 0 ? 0 : scopeDeliveriesSteady / keepalives,
    idleAlarms,
    idleRequests,
    listingRowsReadPerPageMax,
    listingLimit: 100,
    sessions,
  }),
);
await client.close();
await stopAllAndExit(0);
