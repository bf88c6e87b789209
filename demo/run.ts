/**
 * The rolling-deploy demo: generation A owns N claims and does fenced work; generation B
 * starts; every claim is handed from A to B while work keeps flowing; a timeline proves
 * there was no overlap (every accepted write carries the newest token, stale writes are
 * rejected) and shows how long each claim had no writer. The handoff is one prepare request
 * and one commit request for all claims (batch, docs/protocol.md#batch); A keeps working
 * while the claims are only prepared and drains just before the commit. Each generation's
 * claims are bound to its lease (docs/protocol.md#sessions: one keepalive per generation
 * over the lease channel, no renew per claim; the commit binds them to B's lease), or,
 * with `--unbound`, each claim renews its own ttl.
 *
 * The last line of the output is one JSON object for scripts and tests:
 * `{"claims":N,"rttMs":…,"gapMs":…,"staleWritesRejected":…}` — `rttMs` is the median round
 * trip of a no-op request (`GET /healthz`), `gapMs` the longest time any claim had no
 * writer (the old owner's last accepted write → the new owner's first accepted write, max
 * over claims; `null` if some claim never got a write from the new owner), and
 * `staleWritesRejected` the writes of the old generation that fencing refused.
 *
 * Run: `npm run demo` (uses the server on $SHIFTLOCK_URL or http://127.0.0.1:8787, and
 * starts a private local one like `npm start` when none answers). Options
 * (demo/options.ts): `--claims N` (default 4), `--url URL`, `--drain before-commit|before-prepare`
 * (when A drains: default before-commit, A working on while its claims are only prepared),
 * `--rtt-ms MS` (both generations
 * talk to the server through bench/wan-relay.mjs, which adds that round trip; `rttMs` is then
 * the `/healthz` median through the relay, and the demo refuses to run, exit 3, when it is
 * more than 2 ms off), `--unbound`, `--help`. Token:
 * $SHIFTLOCK_TOKEN or `dev-token`. Exit status 1 when an invariant is violated, 2 for a
 * usage mistake.
 */
import { execFileSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import { performance } from "node:perf_hooks";
import WebSocket from "ws";
import {
  GenerationSession,
  HttpClaimsBackend,
  HttpTransport,
  type ClaimHandle,
  type RuntimeEvent,
  type WebSocketConstructor,
} from "../src/client/index.ts";
import { parseOrExit } from "../src/cli/options.mjs";
import { health } from "../src/protocol/routes.ts";
import { calibratedRelay } from "../bench/wan-relay.mjs";
import { FencedResource } from "./fenced-resource.ts";
import { DEMO_USAGE, parseDemoArgs } from "./options.ts";

const options = parseOrExit("demo", DEMO_USAGE, () => parseDemoArgs(process.argv.slice(2)));
const N = options.claims;
const WORK_EVERY_MS = 2;
const WRITE_LATENCY_MS = 2;

const t0 = performance.now();
const now = (): number => performance.now() - t0;
const fmt = (ms: number): string => `${ms.toFixed(1).padStart(8)} ms`;
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

async function answers(url: string): Promise<boolean> {
  try {
    return (await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(1_000) })).ok;
  } catch {
    return false;
  }
}

async function serverUrl(): Promise<{ url: string; stop: () => Promise<void> }> {
  const url = options.url ?? process.env["SHIFTLOCK_URL"] ?? "http://127.0.0.1:8787";
  if (await answers(url)) return { url, stop: async () => {} };
  console.log(`no server answers on ${url}; starting a local one (npm start on a free port)…`);
  // startServer runs only the serving half of `npm start`; a fresh clone has no bundle yet.
  execFileSync("npm", ["run", "--silent", "build"], { stdio: ["ignore", "ignore", "inherit"] });
  const { startServer, removeState } = await import("../test/e2e/server.ts");
  const server = await startServer();
  return {
    url: server.url,
    stop: async () => {
      await server.stop();
      removeState(server.stateDir);
    },
  };
}

interface Mark {
  atMs: number;
  who: string;
  what: string;
}

async function main(): Promise<number> {
  const server = await serverUrl();
  // Every client call crosses the modelled WAN; the server itself stays local.
  // It adds what the no-op request does not already take on loopback, so a no-op through it
  // takes the round trip asked for.
  const wan =
    options.rttMs === undefined
      ? undefined
      : await calibratedRelay({
          targetPort: Number(new URL(server.url).port),
          rttMs: options.rttMs,
          noop: (port) => () => fetch(`http://127.0.0.1:${port}/healthz`).then((r) => r.arrayBuffer()),
        });
  const relay = wan?.relay;
  if (wan !== undefined) console.log(wan.check.message);
  if (wan?.check.ok === false) {
    await relay?.close();
    await server.stop();
    return 3;
  }
  const namespace = `demo-${randomUUID().slice(0, 8)}`;
  const conn = {
    baseUrl: relay === undefined ? server.url : relay.rewrite(server.url),
    token: process.env["SHIFTLOCK_TOKEN"] ?? "dev-token",
    namespace,
    WebSocket: WebSocket as unknown as WebSocketConstructor,
  };
  // Two clients, as two deployments would have.
  const backendA = new HttpClaimsBackend(conn);
  const backendB = new HttpClaimsBackend(conn);
  const resource = new FencedResource(now, namespace);
  const marks: Mark[] = [];
  const claims = Array.from({ length: N }, (_, i) => `shard-${i}`);

  try {
    // 1. Round-trip time of a no-op request (the unit the gaps are measured in), and of one
    //    claim mutation (renew) for comparison.
    const transport = new HttpTransport(conn);
    const median = async (samples: number, once: () => Promise<unknown>): Promise<number[]> => {
      await once(); // warm the connection
      const times: number[] = [];
      for (let i = 0; i < samples; i++) {
        const s = performance.now();
        await once();
        times.push(performance.now() - s);
      }
      return times.sort((a, b) => a - b);
    };
    const noops = await median(30, () => transport.call(health, {}));
    const rttMs = noops[Math.floor(noops.length / 2)]!;
    const probe = await backendA.acquireClaim({ claimName: "rtt-probe", generationId: "probe", ttlMs: 10_000 });
    const renews = await median(30, () =>
      backendA.renewClaim({ claimName: "rtt-probe", generationId: "probe", token: probe.fencingToken, ttlMs: 10_000 }),
    );
    await backendA.releaseClaim({ claimName: "rtt-probe", generationId: "probe", token: probe.fencingToken });
    const renewMs = renews[Math.floor(renews.length / 2)]!;

    // 2. Generation A takes every claim and works.
    const suffix = namespace.slice(5);
    const A = await GenerationSession.open({
      service: "billing",
      instanceId: "pod-a",
      backend: backendA,
      generationId: `billing-A-${suffix}`,
      leaseTtlMs: 6_000,
      bound: options.bound,
    });
    const B = await GenerationSession.open({
      service: "billing",
      instanceId: "pod-b",
      backend: backendB,
      generationId: `billing-B-${suffix}`,
      leaseTtlMs: 6_000,
      bound: options.bound,
    });
    const leaseEnd = new Map<string, number>();
    const adoptedAt = new Map<string, number>();
    const record = (who: string) => (e: RuntimeEvent) => {
      const at = now();
      if (e.type === "claim.released" && e.reason === "transferred") leaseEnd.set(e.claim, at);
      if (e.type === "claim.acquired" && who === "B") adoptedAt.set(e.claim, at);
      if (e.type === "claim.renewed" || e.type === "lease.renewed" || e.type === "error") return;
      const detail =
        e.type === "generation.state"
          ? `${e.from} → ${e.to}`
          : "claim" in e
            ? `${e.claim}${"token" in e ? ` token ${e.token}` : ""}${e.type === "claim.acquired" && e.adopted ? " (adopted from the commit event)" : ""}`
            : "epoch" in e
              ? `epoch ${e.epoch}`
              : "";
      marks.push({ atMs: at, who, what: `${e.type} ${detail}`.trim() });
    };
    A.onAny(record("A"));
    B.onAny(record("B"));

    const handlesA = claims.map((c) => A.claim(c));
    const handlesB = claims.map((c) => B.claim(c));
    const tokensA = new Map<string, bigint>();
    for (const h of handlesA) tokensA.set(h.name, (await h.waitForOwnership()).token);

    let running = true;
    // One write to each claim `session` holds, as one unit of work per claim (the handoff's
    // drain waits for units in flight). One loop per generation, not one per claim, so the
    // demo's own timers do not swamp the event loop that delivers the commit events.
    const writeHeld = async (session: GenerationSession, handles: readonly ClaimHandle[]): Promise<void> => {
      const units = handles.flatMap((h) => {
        const lease = h.lease;
        const end = lease === undefined ? undefined : session.drain.tryBegin();
        return lease === undefined || end === undefined ? [] : [{ h, lease, end }];
      });
      if (units.length === 0) return;
      try {
        await sleep(WRITE_LATENCY_MS); // the writes' own I/O, inside the drain units
        for (const { h, lease } of units) if (lease.held) resource.write(h.name, session.generationId, lease.token);
      } finally {
        for (const { end } of units) end();
      }
    };
    const worker = async (session: GenerationSession, handles: readonly ClaimHandle[]): Promise<void> => {
      while (running) {
        await writeHeld(session, handles);
        await sleep(WORK_EVERY_MS);
      }
    };
    const workers = [worker(A, handlesA)];
    await sleep(800);

    // 3. Generation B starts and waits (watch + poll) for each claim, and writes the moment
    //    it owns one (then with the regular loop).
    const waits = handlesB.map((h) => h.waitForOwnership().then(() => writeHeld(B, [h])));
    workers.push(worker(B, handlesB));
    await sleep(400);

    // 4. Hand everything from A to B while work keeps flowing.
    const handoffStart = now();
    marks.push({ atMs: handoffStart, who: "A", what: `handoffTo(${B.generationId})` });
    const result = await A.handoffTo(B.generationId, { drain: options.drain });
    const handoffEnd = now();
    await Promise.all(waits);
    await sleep(800);

    // 5. A zombie of A (e.g. paused during the handoff) writes with its old tokens.
    for (const c of claims) resource.write(c, A.generationId, tokensA.get(c)!, true);
    running = false;
    await Promise.all(workers);
    await B.close();

    // 6. Report.
    const via = relay === undefined ? "" : ` via a WAN relay adding ${options.rttMs} ms RTT`;
    console.log(`\nshiftlock rolling-deploy demo — ${server.url}${via}, namespace ${namespace}, ${N} claims`);
    console.log(
      `round trip: no-op (GET /healthz) median ${rttMs.toFixed(1)} ms; one claim renew median ${renewMs.toFixed(1)} ms`,
    );
    console.log(
      options.bound
        ? "claims bound to each generation's lease: one keepalive per generation every ttl/3 (the lease channel), no renew per claim\n"
        : "claims unbound (--unbound): each claim renews its own ttl every ttl/3\n",
    );
    console.log("timeline (ms since start; writes summarised per generation below)");
    for (const m of marks.sort((a, b) => a.atMs - b.atMs)) console.log(`${fmt(m.atMs)}  ${m.who}  ${m.what}`);

    console.log("\nper claim");
    console.log(
      "claim     tokens  A last write   B first write   no-writer gap   in RTTs   B owned after A's lease ended",
    );
    let worstGap = 0; // NaN once some claim has no gap to measure
    for (const c of claims) {
      const writes = resource.log.filter((w) => w.claim === c && w.accepted);
      const lastA = writes.filter((w) => w.generation === A.generationId).at(-1);
      const firstB = writes.find((w) => w.generation === B.generationId);
      const moved = result.claims.find((x) => x.claim === c);
      const gap = firstB !== undefined && lastA !== undefined ? firstB.atMs - lastA.atMs : NaN;
      worstGap = Math.max(worstGap, gap);
      const adoptLag = (adoptedAt.get(c) ?? NaN) - (leaseEnd.get(c) ?? NaN);
      console.log(
        `${c.padEnd(9)} ${`${tokensA.get(c)}→${moved?.token ?? "?"}`.padEnd(7)} ${fmt(lastA?.atMs ?? NaN)}  ${fmt(firstB?.atMs ?? NaN)}  ${fmt(gap)}     ${(gap / rttMs).toFixed(1).padStart(5)}    ${fmt(adoptLag)}`,
      );
    }
    const accepted = resource.log.filter((w) => w.accepted);
    const stale = resource.log.filter((w) => w.stale === true);
    const staleWritesRejected = resource.log.filter((w) => w.generation === A.generationId && !w.accepted).length;
    const violations = resource.violations();
    const allMoved = result.claims.length === N;
    console.log(
      `\nhandoff of ${N} claims took ${(handoffEnd - handoffStart).toFixed(1)} ms (${((handoffEnd - handoffStart) / rttMs).toFixed(1)} RTTs; every claim prepared in one request, then committed in one)`,
    );
    console.log(
      `writes: ${accepted.filter((w) => w.generation === A.generationId).length} accepted from A, ${accepted.filter((w) => w.generation === B.generationId).length} accepted from B, ${stale.filter((w) => !w.accepted).length}/${stale.length} stale writes from A's old tokens rejected`,
    );
    console.log(
      `no overlap: every accepted write carried the newest token of its claim${violations.length === 0 ? " ✔" : " ✘"}`,
    );
    for (const v of violations) console.log(`  violation: ${v}`);
    const at = (what: string, last = false): number => {
      const hits = marks.filter((m) => m.who === "A" && m.what.startsWith(what));
      return (last ? hits.at(-1) : hits[0])?.atMs ?? NaN;
    };
    const drainMs = at("drain.completed") - at("drain.started");
    const early = options.drain === "before-prepare";
    const prepareMs = at("transfer.prepared", true) - (early ? at("drain.completed") : handoffStart);
    const commitMs = at("handoff.completed") - (early ? at("transfer.prepared", true) : at("drain.completed"));
    console.log(
      `phases (${early ? "drain → prepare → commit" : "prepare while A works → drain → commit"}): drain ${drainMs.toFixed(1)} ms, prepare ${prepareMs.toFixed(1)} ms, commit ${commitMs.toFixed(1)} ms; B adopts on the commit event (negative lag = before A's commit response arrived)`,
    );
    console.log(
      `worst no-writer gap ${worstGap.toFixed(1)} ms (${(worstGap / rttMs).toFixed(1)} RTTs) = ${early ? "drain + prepare + commit" : "drain + commit"} + adoption; the server had an owner at every instant (commit moves ownership atomically)`,
    );
    const round = (ms: number): number | null => (Number.isFinite(ms) ? Math.round(ms * 100) / 100 : null);
    console.log(JSON.stringify({ claims: N, rttMs: round(rttMs), gapMs: round(worstGap), staleWritesRejected }));
    const ok = violations.length === 0 && allMoved && Number.isFinite(worstGap) && stale.every((w) => !w.accepted);
    return ok ? 0 : 1;
  } finally {
    await backendA.close();
    await backendB.close();
    await relay?.close();
    await server.stop();
  }
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
