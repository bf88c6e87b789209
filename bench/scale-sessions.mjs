/**
 * The session workload of `npm run bench:scale` (docs/scale.md "Sessions"): bound claims
 * held under their generations' leases (docs/protocol.md#sessions), counted per phase from
 * the server's per-object meter lines and projected to 100,000 claims under 1,000
 * generations, over the lease channel (the client's default) and over HTTP keepalives.
 *
 * Phases, on a server started with `--object-meter on` (bench/scale.mjs's, or its own when
 * run alone: `node bench/scale-sessions.mjs`):
 * - `sessions-setup`: G generations register, open their lease channels (ttl 15 s) and
 *   acquire C claims each, bound, through the batch route;
 * - `sessions-steady-channel`: every channel pings every 5 s (the exact `{"type":"ping"}`,
 *   which the runtime answers without waking the object); nothing else is sent;
 * - `sessions-steady-http`: the same leases kept by `POST …/keepalive` every 5 s instead,
 *   the channels closed (a switch of one ttl, not counted, comes first);
 * - `sessions-handoff`: G new generations open channels; each old generation's claims are
 *   prepared and committed, bound, in one batch each, and the old generation retires;
 * - `sessions-lease-end`: a watch on each claim of one generation, then `lease/end`: the time
 *   until the last watcher hears `expired`;
 * - `sessions-lapse`: another generation stops pinging and closes its channel: the time from
 *   its deadline (at the latest its last ping's send time + ttl) to the last `expired` (the
 *   generation's alarm notices a lapse at the deadline, or `--lease-notice-ttls` ttls after
 *   it: src/core/generation-lease.ts `noticeAtMs`).
 *
 * The steady phases run at the target's ttl and keepalive period, so the projection only
 * multiplies by the number of generations (and claims); it never assumes an object is called
 * more often than it was (bench/scale-model.mjs `projectSessions`).
 *
 * Guarantees: every count comes from meter lines (never sampled) or from this process's own
 * sends; a request that fails (other than a 502/503 of the local front, sent again with the
 * same operation id and counted) stops the run with its answer.
 * Does not: measure latency or CPU that transfers to Cloudflare (durations here are a shared
 * 2-core machine's), nor bill what the runtime does outside JavaScript: the auto-responded
 * pings leave no meter line, and are priced by the documented reading (free), with the 20:1
 * reading printed beside it.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { pathToFileURL } from "node:url";
import WebSocket from "ws";
import { hardLimit, stopAllAndExit } from "./cleanup.mjs";
import { expectStatus, makeClient } from "./http.mjs";
import {
  WS_MESSAGE_BILLING,
  countByPhase,
  kindOf,
  parseMeterLine,
  projectPhase,
  projectSessions,
  summarize,
} from "./scale-model.mjs";
import { reportSessions } from "./scale-sessions-report.mjs";
import { startServer } from "./server.mjs";
import { UsageError, parseInteger, parseOptions } from "../src/cli/options.mjs";
import { MAX_LEASE_NOTICE_TTLS } from "../src/core/generation-lease.ts";

/** The projected deployment, also the measured one: ttl 15 s, a keepalive every 5 s. */
const TTL_MS = 15_000;
const KEEPALIVE_MS = 5_000;
const TARGET = { claims: 100_000, generations: 1_000, shards: 32, handoffS: 60 };
const PING_TEXT = '{"type":"ping"}';
/**
 * Generations set up or handed over at once. Each sends batches of 100 ops; several at once
 * kept this shared 2-core machine's local runtime busy for longer than a ttl, and leases then
 * lapsed while their keepalives waited in its queue (a local artefact: deployed, each object
 * runs on its own). The counts per claim do not depend on it.
 */
const PARALLEL = 1;

/** The options this workload adds to bench:scale (parsed by {@link sessionSettings}). */
export const SESSION_OPTIONS = /** @type {const} */ ({
  "session-generations": { type: "string", default: "20" },
  "session-claims": { type: "string", default: "100" },
  "session-steady-s": { type: "string", default: "120" },
  "lease-notice-ttls": { type: "string", default: "0" },
});
export const SESSION_USAGE =
  "[--session-generations N (0: none, else ≥ 2)] [--session-claims N per generation, ≤ 128] [--session-steady-s S] [--lease-notice-ttls N (the server's LEASE_NOTICE_TTLS, default 0)]";

/**
 * @typedef {{ generations: number, claimsPerGeneration: number, steadyS: number, noticeTtls: number }} SessionSettings
 * @param {{ "session-generations"?: string, "session-claims"?: string, "session-steady-s"?: string, "lease-notice-ttls"?: string }} values
 * @returns {SessionSettings}
 */
export function sessionSettings(values) {
  const int = (/** @type {string} */ label, /** @type {string | undefined} */ text, min = 1, max = 1_000) =>
    /** @type {number} */ (parseInteger(label, text, { min, max }));
  const generations = int("--session-generations", values["session-generations"], 0);
  // Two at least: a lease end and the lapse each spend one.
  if (generations === 1) throw new UsageError("--session-generations must be 0 (no session workload) or at least 2");
  return {
    generations,
    claimsPerGeneration: int("--session-claims", values["session-claims"], 1, 128),
    steadyS: int("--session-steady-s", values["session-steady-s"], 15, 3_600),
    noticeTtls: int("--lease-notice-ttls", values["lease-notice-ttls"], 0, MAX_LEASE_NOTICE_TTLS),
  };
}

/**
 * A WebSocket opened with the bench's token whose JSON messages queue up for {@link next}.
 * @param {string} httpUrl
 * @param {string} token
 */
async function openSocket(httpUrl, token) {
  const ws = new WebSocket(httpUrl.replace(/^http/, "ws"), { headers: { authorization: `Bearer ${token}` } });
  /** @typedef {{ type?: string, reason?: string }} Message what the bench reads of a message */
  /** @type {Message[]} */
  const queue = [];
  /** @type {(() => void) | undefined} */
  let wake;
  ws.on("message", (/** @type {Buffer} */ data) => {
    const message = /** @type {Message} */ (/** @type {unknown} */ (JSON.parse(data.toString("utf8"))));
    queue.push(message);
    wake?.();
  });
  ws.on("error", () => undefined);
  await new Promise((resolve, reject) => {
    ws.once("open", resolve);
    ws.once("error", reject);
    ws.once("unexpected-response", (_req, res) => reject(new Error(`${httpUrl}: upgrade answered ${res.statusCode}`)));
  });
  /** The next message `match` accepts (earlier ones are dropped), or a timeout error. */
  const next = async (/** @type {(m: Message) => boolean} */ match, timeoutMs = 30_000) => {
    const until = Date.now() + timeoutMs;
    for (;;) {
      const i = queue.findIndex(match);
      if (i >= 0) return queue.splice(0, i + 1).at(-1);
      queue.length = 0;
      if (Date.now() > until) throw new Error(`${httpUrl}: no expected message within ${timeoutMs} ms`);
      await new Promise((resolve) => {
        wake = () => resolve(undefined);
        setTimeout(resolve, 250);
      });
    }
  };
  return { ws, next };
}

/**
 * Run the workload against `serverUrl` (a server with `--object-meter on` whose meter lines
 * land in `lines`).
 * @param {{ serverUrl: string, token: string, client: import("./http.mjs").BenchClient,
 *   lines: import("./scale-model.mjs").MeterLine[], settings: SessionSettings, shards: number }} ctx
 */
export async function runSessionWorkload({ serverUrl, token, client, lines, settings, shards }) {
  const { generations: G, claimsPerGeneration: C, steadyS } = settings;
  const base = `${serverUrl}/v1/ns/sessions`;
  let workerRequests = 0;
  let wsIn = 0;
  let frontRetries = 0;
  /** A request through the Worker, sent again on a 502/503 of the local front (its body carries an operation id when it mutates). */
  const call = async (
    /** @type {string} */ method,
    /** @type {string} */ url,
    /** @type {unknown} */ body = undefined,
  ) => {
    for (let attempt = 1; ; attempt++) {
      workerRequests++;
      const reply = await client.call(method, url, body);
      if ((reply.status !== 502 && reply.status !== 503) || attempt === 5) return reply;
      frontRetries++;
      await sleep(250 * attempt);
    }
  };
  const socket = (/** @type {string} */ url) => {
    workerRequests++;
    return openSocket(url, token);
  };
  const genUrl = (/** @type {string} */ id) => `${base}/generations/${id}`;
  const claimName = (/** @type {number} */ g, /** @type {number} */ c) => `s-${g}-${c}`;

  /** @type {import("./scale-model.mjs").Phase[]} */
  const phases = [];
  /** @type {Record<string, { workerRequests: number, wsIn: number }>} */
  const sent = {};
  async function phase(/** @type {string} */ name, /** @type {() => Promise<void>} */ run) {
    const startMs = Date.now();
    phaseNow = name;
    const before = { workerRequests, wsIn };
    await run();
    phases.push({ name, startMs, endMs: Date.now() });
    sent[name] = { workerRequests: workerRequests - before.workerRequests, wsIn: wsIn - before.wsIn };
    console.error(`phase ${name}: ${((Date.now() - startMs) / 1000).toFixed(1)} s`);
  }
  /**
   * Wait until nothing but the generations' keeping of their leases (keepalives, channel
   * messages, alarms and the outbox flush each alarm starts) happened for 2.5 s: what a
   * phase caused on claims and the listing (a generation's changes reach it as shard calls).
   */
  async function settle() {
    const started = Date.now();
    const keeping = new Set(["keepalive", "alarm", "webSocketMessage", "fetch", "delivery"]);
    const counted = () => lines.filter((l) => !(kindOf(l.obj) === "generation" && keeping.has(l.op))).length;
    let seen = counted();
    let since = Date.now();
    for (const until = Date.now() + 120_000; Date.now() < until; await sleep(250)) {
      if (counted() !== seen) [seen, since] = [counted(), Date.now()];
      else if (Date.now() - since >= 2_500) return console.error(`settled in ${(Date.now() - started) / 1000} s`);
    }
    throw new Error("sessions: the server never went quiet");
  }
  /** One batch of ops (≤ 128), each with an operation id; every op must answer 200. */
  /**
   * One batch of ops (≤ 128), each with an operation id; every op must answer 200, else the
   * error says what the client knew of the `concerned` generations' leases and what the server says.
   */
  async function batch(/** @type {object[]} */ ops, /** @type {string[]} */ concerned) {
    const sentMs = Date.now();
    try {
      return await batchOnce(ops);
    } catch (err) {
      const said = await Promise.all(
        concerned.map(async (id) => {
          const l = leases.get(id);
          const client = `opened ${l?.openedMs}, last ping sent ${l?.lastPingSentMs}, last pong ${l?.lastPongMs}`;
          return `${id}: client ${client}; server ${JSON.stringify((await call("GET", genUrl(id))).body)}`;
        }),
      );
      throw new Error(`${String(err)}; batch sent ${sentMs}, now ${Date.now()}; ${said.join("; ")}; ${clientSaw()}`);
    }
  }
  async function batchOnce(/** @type {object[]} */ ops) {
    const body = { ops: ops.map((op) => ({ operationId: `sessions-${crypto.randomUUID()}`, ...op })) };
    const { results } = /** @type {{ results: { status: number, body: any }[] }} */ (
      /** @type {unknown} */ (expectStatus(await call("POST", `${base}/batch`, body), 200, "batch"))
    );
    const failed = results.filter((r) => r.status !== 200);
    if (failed.length > 0) throw new Error(`batch: ${failed.length} ops failed, e.g. ${JSON.stringify(failed[0])}`);
    return results.map((r) => /** @type {{ claim: { fencingToken: string } }} */ (r.body).claim);
  }
  const patch = async (/** @type {string} */ id, /** @type {string} */ state) =>
    expectStatus(await call("PATCH", genUrl(id), { state, reason: "bench" }), 200, `${id} → ${state}`);

  /**
   * A generation's lease, kept over its channel (`channel()`) or by HTTP keepalives
   * (`http()`), each every 5 s from `offsetMs`; `stop()` ends either loop.
   */
  function lease(/** @type {string} */ id, /** @type {number} */ offsetMs) {
    const state = {
      id,
      /** @type {Awaited<ReturnType<typeof openSocket>> | undefined} */ channel: undefined,
      pongs: 0,
      lastPingSentMs: 0,
      lastPongMs: 0,
      openedMs: 0,
      /** The lease epoch the generation started with; another one later means its lease ended unasked. */
      epoch: "",
      /** @type {Promise<void>} */ loop: Promise.resolve(),
      stopLoop: new AbortController(),
    };
    // No operation id: a keepalive may simply be repeated, and an id costs the operation log's rows.
    const keepalive = async () => {
      const sentMs = Date.now();
      const reply = await call("POST", `${genUrl(id)}/keepalive`, { ttlMs: TTL_MS });
      slowest.keepaliveMs = Math.max(slowest.keepaliveMs, Date.now() - sentMs);
      const { generation } = /** @type {{ generation: { leaseEpoch: string } }} */ (
        /** @type {unknown} */ (expectStatus(reply, 200, `keepalive ${id}`))
      );
      if (state.epoch !== generation.leaseEpoch) lost(`${id}: epoch ${state.epoch} → ${generation.leaseEpoch}`);
    };
    /** One keepalive every 5 s from `offsetMs` until stopped: a ping on the channel, or an HTTP keepalive. */
    const keep = (/** @type {"channel" | "http"} */ mode) => {
      /** @type {Set<Promise<void>>} */
      const inFlight = new Set();
      const stopped = new AbortController();
      state.stopLoop = stopped;
      state.loop = (async () => {
        try {
          for (await sleep(offsetMs, undefined, stopped); ; await sleep(KEEPALIVE_MS, undefined, stopped)) {
            if (mode === "channel") {
              const ws = state.channel?.ws;
              if (ws === undefined || ws.readyState !== WebSocket.OPEN) return;
              state.lastPingSentMs = Date.now();
              ws.send(PING_TEXT);
              wsIn++;
            } else {
              // On schedule, whether or not the last one was answered: a loaded local server may
              // take seconds to answer, and a loop that waited would drift past the deadline.
              const sent = keepalive()
                .catch((/** @type {unknown} */ err) => lost(`${id}: ${String(err)}`))
                .finally(() => inFlight.delete(sent));
              inFlight.add(sent);
            }
          }
        } catch (err) {
          if (!stopped.signal.aborted) throw err;
        } finally {
          await Promise.all(inFlight);
        }
      })();
    };
    /** Open the channel; one the bench did not close is counted and opened again, as a client would. */
    const openChannel = async () => {
      const channel = await socket(`${genUrl(id)}/lease?ttlMs=${TTL_MS}`);
      const first = /** @type {{ generation: { leaseEpoch: string } }} */ (
        /** @type {unknown} */ (await channel.next((m) => m.type === "generation"))
      );
      state.epoch ||= first.generation.leaseEpoch;
      if (state.epoch !== first.generation.leaseEpoch) lost(`${id}: reopened on epoch ${first.generation.leaseEpoch}`);
      channel.ws.on("message", (/** @type {Buffer} */ data) => {
        const text = data.toString("utf8");
        if (text === '{"type":"pong"}') {
          state.pongs++;
          state.lastPongMs = Date.now();
          slowest.pongMs = Math.max(slowest.pongMs, state.lastPongMs - state.lastPingSentMs);
        } else if (text.includes('"type":"ended"') && !ending.has(id)) lost(`${id}: channel said ${text}`);
      });
      channel.ws.on("close", (code, reason) => {
        if (state.channel !== channel || ending.has(id)) return;
        drops.push(`${id}: channel closed (${code} ${reason.toString()}) at ${new Date().toISOString()} (${phaseNow})`);
        state.stopLoop.abort();
        void state.loop
          .then(async () => {
            if (state.channel !== channel) return;
            await openChannel();
            keep("channel");
          })
          .catch((/** @type {unknown} */ err) => lost(`${id}: reopening the channel failed: ${String(err)}`));
      });
      state.channel = channel;
      state.openedMs = Date.now();
    };
    return Object.assign(state, {
      async channelOn() {
        await openChannel();
        keep("channel");
      },
      /** Keep the lease by HTTP from now on (a channel stays open until {@link stopChannel}). */
      async httpOn() {
        state.stopLoop.abort();
        await state.loop;
        // One at once: what the channel's pings promised must not rest on the channel alone.
        await keepalive();
        keep("http");
      },
      stopChannel() {
        const ws = state.channel?.ws;
        state.channel = undefined;
        ws?.close(1000);
      },
      /** Stop keeping the lease (it runs to its deadline) and close the channel. */
      async stop() {
        state.stopLoop.abort();
        await state.loop;
        const ws = state.channel?.ws;
        state.channel = undefined;
        ws?.close(1000);
      },
    });
  }
  /** Generations whose lease the bench ends (lease/end, retire, lapse): an `ended` is expected. */
  const ending = new Set();
  /** @type {string[]} leases that ended unasked, with when */
  const losses = [];
  /** The slowest answer to a keepalive and to a ping: how long the loaded local server kept a lease waiting. */
  const slowest = { keepaliveMs: 0, pongMs: 0 };
  /** What the client saw, for an error: the slowest answers, the leases lost, the channels reopened. */
  const clientSaw = () =>
    [
      `slowest answer to a keepalive ${slowest.keepaliveMs} ms, to a ping ${slowest.pongMs} ms`,
      ...losses,
      ...drops,
    ].join("; ");
  /** @type {string[]} channels the server (or the local front) closed, each reopened */
  const drops = [];
  let phaseNow = "";
  const lost = (/** @type {string} */ what) => void losses.push(`${what} at ${new Date().toISOString()} (${phaseNow})`);
  /** Stop the run when a lease ended that nobody ended: the server misbehaved. */
  const noLosses = () => {
    if (losses.length > 0) throw new Error(`sessions: a lease ended unasked: ${clientSaw()}`);
  };
  /** Spread G loops over one keepalive period. */
  const offset = (/** @type {number} */ g) => (KEEPALIVE_MS * g) / G;

  const oldIds = Array.from({ length: G }, (_, g) => `old-${g}`);
  const newIds = Array.from({ length: G }, (_, g) => `new-${g}`);
  const leases = new Map(oldIds.map((id, g) => [id, lease(id, offset(g))]));
  /** @type {Map<string, string>} claim → fencing token */
  const tokens = new Map();
  const register = async (/** @type {string} */ id) => {
    expectStatus(await call("POST", `${base}/generations`, { id, service: "sessions", instanceId: id }), 200, id);
    await patch(id, "standby");
  };
  /** Run `work(i)` for i < n, `parallel` at a time. */
  const pool = async (
    /** @type {number} */ n,
    /** @type {number} */ parallel,
    /** @type {(i: number) => Promise<void>} */ work,
  ) => {
    let next = 0;
    await Promise.all(
      Array.from({ length: parallel }, async () => {
        while (next < n) await work(next++);
      }),
    );
  };

  await phase("sessions-setup", async () => {
    await pool(G, PARALLEL, async (g) => {
      const id = /** @type {string} */ (oldIds[g]);
      await register(id);
      await /** @type {ReturnType<typeof lease>} */ (leases.get(id)).channelOn();
      const names = Array.from({ length: C }, (_, c) => claimName(g, c));
      const claims = await batch(
        names.map((claim) => ({ op: "acquire", claim, generationId: id, bound: true })),
        [id],
      );
      claims.forEach((claim, c) => tokens.set(/** @type {string} */ (names[c]), claim.fencingToken));
      await patch(id, "active");
    });
    await settle();
  });

  await phase("sessions-steady-channel", () => sleep(steadyS * 1000));
  noLosses();
  const pongsChannel = [...leases.values()].reduce((a, l) => a + l.pongs, 0);

  // The switch (not counted): HTTP keepalives start, then the channels close; one ttl passes.
  await Promise.all([...leases.values()].map((l) => l.httpOn()));
  for (const l of leases.values()) l.stopChannel();
  await sleep(TTL_MS);
  await settle();
  await phase("sessions-steady-http", () => sleep(steadyS * 1000));
  noLosses();

  let handoffS = 0;
  await phase("sessions-handoff", async () => {
    // The successors register and keep their leases over channels before anything moves.
    await pool(G, PARALLEL, async (g) => {
      const id = /** @type {string} */ (newIds[g]);
      const l = lease(id, offset(g));
      leases.set(id, l);
      await register(id);
      await l.channelOn();
    });
    const started = Date.now();
    await pool(G, PARALLEL, async (g) => {
      const [from, to] = [/** @type {string} */ (oldIds[g]), /** @type {string} */ (newIds[g])];
      const names = Array.from({ length: C }, (_, c) => claimName(g, c));
      await patch(from, "transferring");
      const transfer = (/** @type {string} */ claim) => ({
        claim,
        fromGeneration: from,
        toGeneration: to,
        bound: true,
      });
      await batch(
        names.map((claim) => ({ op: "prepare", ...transfer(claim), token: tokens.get(claim) })),
        [from, to],
      );
      const committed = await batch(
        names.map((claim) => ({ op: "commit", ...transfer(claim), expectedToken: tokens.get(claim) })),
        [from, to],
      );
      committed.forEach((claim, c) => tokens.set(/** @type {string} */ (names[c]), claim.fencingToken));
      await patch(to, "active");
      await /** @type {ReturnType<typeof lease>} */ (leases.get(from)).stop();
      ending.add(from);
      await patch(from, "retired");
    });
    handoffS = (Date.now() - started) / 1000;
    noLosses();
    await settle();
  });

  /** Watches on every claim of generation g; resolves when each heard `expired`, with the last time. */
  async function watchAll(/** @type {number} */ g) {
    const watches = await Promise.all(
      Array.from({ length: C }, async (_, c) => {
        const w = await socket(`${base}/claims/${claimName(g, c)}/watch`);
        await w.next((m) => m.type === "snapshot");
        return w;
      }),
    );
    return async () => {
      const times = await Promise.all(
        watches.map(async (w) => {
          // The alarm notices a lapse at the deadline (or the notice grace after it); then the deliveries.
          await w.next((m) => m.type === "event" && m.reason === "expired", 120_000);
          const at = Date.now();
          w.ws.close(1000);
          return at;
        }),
      );
      return { firstMs: Math.min(...times), lastMs: Math.max(...times) };
    };
  }

  /** Per lease ended: ms from `lease/end` until the last of its claims' watchers heard `expired`. */
  /** @type {number[]} */
  const expiryToWatchersMs = [];
  // Three generations in turn (new-1 is the lapse's): one figure on a loaded machine says little.
  const endedGenerations = [0, 2, 3].filter((g) => g < G);
  await phase("sessions-lease-end", async () => {
    for (const g of endedGenerations) {
      const id = /** @type {string} */ (newIds[g]);
      const allExpired = await watchAll(g);
      const endedAt = Date.now();
      ending.add(id);
      expectStatus(await call("POST", `${genUrl(id)}/lease/end`, { operationId: `end-${id}` }), 200, `end ${id}`);
      expiryToWatchersMs.push((await allExpired()).lastMs - endedAt);
      await /** @type {ReturnType<typeof lease>} */ (leases.get(id)).stop();
      await settle();
    }
  });

  let lapseToWatchersMs = 0;
  /** When the first watcher heard `expired`, from the same deadline: negative means before it. */
  let lapseFirstMs = 0;
  await phase("sessions-lapse", async () => {
    const id = /** @type {string} */ (newIds[1]);
    ending.add(id);
    const allExpired = await watchAll(1);
    const l = /** @type {ReturnType<typeof lease>} */ (leases.get(id));
    l.stopLoop.abort();
    await l.loop;
    // The last ping counts once it is answered: then the channel closes.
    for (const until = Date.now() + 5_000; l.lastPongMs < l.lastPingSentMs; await sleep(20)) {
      if (Date.now() > until) throw new Error(`${id}: the last ping before the lapse was not answered`);
    }
    l.stopChannel();
    // The server stamps the last ping when it arrives, after it was sent: its deadline is at the latest this.
    const heard = await allExpired();
    lapseFirstMs = heard.firstMs - (l.lastPingSentMs + TTL_MS);
    lapseToWatchersMs = heard.lastMs - (l.lastPingSentMs + TTL_MS);
    await settle();
  });

  for (const l of leases.values()) await l.stop();

  const byPhase = countByPhase(lines, phases);
  /** @type {Record<string, Record<string, number>>} phase → "kind op" → meter lines */
  const ops = {};
  for (const line of lines) {
    const p = phases.find((x) => line.startMs >= x.startMs && line.startMs < x.endMs);
    if (p === undefined) continue;
    const key = `${kindOf(line.obj)} ${line.op}`;
    const counts = (ops[p.name] ??= {});
    counts[key] = (counts[key] ?? 0) + 1;
  }
  /** @type {Record<string, { seconds: number, summary: ReturnType<typeof summarize> }>} */
  const measured = {};
  for (const p of phases) {
    const seconds = (p.endMs - p.startMs) / 1000;
    measured[p.name] = { seconds, summary: summarize(/** @type {Map<string, any>} */ (byPhase.get(p.name)), seconds) };
  }
  const at = (/** @type {string} */ name) =>
    /** @type {{ seconds: number, summary: ReturnType<typeof summarize> }} */ (measured[name]);
  const keepalivesOf = (/** @type {string} */ name) =>
    name === "sessions-steady-channel"
      ? /** @type {{ wsIn: number }} */ (sent[name]).wsIn
      : /** @type {{ workerRequests: number }} */ (sent[name]).workerRequests;
  const project = (/** @type {string} */ name, /** @type {number} */ wsBilledPerMessage) =>
    projectSessions(at(name).summary, {
      seconds: at(name).seconds,
      generations: G,
      claims: G * C,
      workerRequests: /** @type {{ workerRequests: number }} */ (sent[name]).workerRequests,
      wsMessagesIn: /** @type {{ wsIn: number }} */ (sent[name]).wsIn,
      targetGenerations: TARGET.generations,
      targetClaims: TARGET.claims,
      wsBilledPerMessage,
    });
  const handoff = at("sessions-handoff");
  /** The most requests one generation object took in the hand-over (a successor's lease checks and binds). */
  let handoffGenerationMax = 0;
  for (const [obj, c] of /** @type {Map<string, { requests: number }>} */ (byPhase.get("sessions-handoff"))) {
    if (kindOf(obj) === "generation") handoffGenerationMax = Math.max(handoffGenerationMax, c.requests);
  }
  const handoffP = projectPhase(handoff.summary, {
    seconds: handoff.seconds,
    opsPerS: (G * C) / handoffS,
    opsPerSProjected: TARGET.claims / TARGET.handoffS,
    // Each object's share of the hand-over (its generation's claims) spread over 60 s.
    perObjectFactor: handoff.seconds / TARGET.handoffS,
    shardsMeasured: shards,
    shardsProjected: TARGET.shards,
    forwardWindowS: 0.5,
  });
  const steadyRows = (/** @type {string} */ name) => {
    const g = at(name).summary.byKind["generation"];
    const n = keepalivesOf(name);
    return { rows: n === 0 ? 0 : (g?.rowsWritten ?? 0) / n, alarmWrites: n === 0 ? 0 : (g?.alarmsSet ?? 0) / n };
  };
  return {
    G,
    C,
    ttlMs: TTL_MS,
    keepaliveMs: KEEPALIVE_MS,
    noticeTtls: settings.noticeTtls,
    target: TARGET,
    phases,
    measured,
    ops,
    sent,
    frontRetries,
    drops,
    slowest,
    pongsChannel,
    handoffS,
    handoffP,
    expiryToWatchersMs,
    endedGenerations: endedGenerations.length,
    handoffGenerationMax,
    lapseToWatchersMs,
    lapseFirstMs,
    keepalives: { channel: keepalivesOf("sessions-steady-channel"), http: keepalivesOf("sessions-steady-http") },
    perKeepalive: { channel: steadyRows("sessions-steady-channel"), http: steadyRows("sessions-steady-http") },
    channel: project("sessions-steady-channel", WS_MESSAGE_BILLING.free),
    channelTwentyToOne: project("sessions-steady-channel", WS_MESSAGE_BILLING.twentyToOne),
    http: project("sessions-steady-http", WS_MESSAGE_BILLING.free),
  };
}

/** Run alone: its own metered server, the workload, its tables and one JSON line `{"sessions": …}`. */
async function main() {
  const { values } = parseOptions(process.argv.slice(2), { ...SESSION_OPTIONS, help: { type: "boolean" } });
  if (values.help) {
    console.log(`usage: node bench/scale-sessions.mjs ${SESSION_USAGE}`);
    return stopAllAndExit(0);
  }
  const settings = sessionSettings(values);
  hardLimit("bench:scale sessions", 1_800_000);
  /** @type {import("./scale-model.mjs").MeterLine[]} */
  const lines = [];
  const shards = 16;
  const server = await startServer("npm-start", {
    serveArgs: `--object-meter on --listing-shards ${shards} --lease-notice-ttls ${settings.noticeTtls}`,
    onLine: (line) => {
      const m = parseMeterLine(line);
      if (m !== undefined) lines.push(m);
    },
  });
  const client = await makeClient("dev-token");
  const result = await runSessionWorkload({
    serverUrl: server.url,
    token: "dev-token",
    client,
    lines,
    settings,
    shards,
  });
  console.log(JSON.stringify({ sessions: reportSessions(result, undefined) }));
  await client.close();
  return stopAllAndExit(0);
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) await main();
