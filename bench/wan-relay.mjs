/**
 * A WAN model for the benchmarks: a TCP relay on loopback that delays every byte, in both
 * directions, by a configurable one-way delay (plus optional jitter), so clients on this
 * machine see a server "far away" while the server stays local. Plain TCP, so HTTP/1.1
 * keep-alive, WebSocket upgrades and frames, etcd's gateway and Redis's RESP all pass
 * through it unchanged.
 *
 * Guarantees: each direction of each connection is a {@link DelayLine}: bytes leave in the
 * order they arrived, never before `arrival + delay` (jitter never reorders: a chunk that
 * drew a shorter delay waits for the one before it); a half-close (FIN) is forwarded after
 * the bytes before it; an error on either side destroys both. {@link startRelay} runs the
 * relay in a worker thread of its own, so the bench's closed loops do not delay its timers.
 * {@link checkRtt} is how a bench run refuses a relay that does not produce the RTT asked
 * for (±2 ms), {@link calibratedRelay} how it gets there.
 * Does not model bandwidth, loss, or Nagle-style coalescing (sockets are `noDelay`), and
 * does not apply backpressure (a bench's traffic is small); timer precision is Node's
 * (≈ 1 ms), which is why the RTT is measured, not assumed.
 */
import { createConnection, createServer } from "node:net";
import { isMainThread, parentPort, Worker, workerData } from "node:worker_threads";

/** How far the measured RTT may be from the one asked for before a run refuses to measure. */
export const RTT_TOLERANCE_MS = 2;

/**
 * One direction of one connection: chunks in, chunks out no earlier than their release
 * time, in arrival order. Pure: time is a parameter and randomness is injected, so tests
 * drive it with a fake clock.
 * @template T
 */
export class DelayLine {
  /** @type {{ item: T, atMs: number }[]} */
  #queue = [];
  #lastAtMs = -Infinity;
  #oneWayMs;
  #jitterMs;
  #random;

  /**
   * @param {{ oneWayMs: number, jitterMs?: number, random?: () => number }} options
   *   `jitterMs`: each chunk's delay is `oneWayMs ± jitterMs` (uniform, never below 0);
   *   `random`: a source in [0, 1) (default Math.random)
   */
  constructor({ oneWayMs, jitterMs = 0, random = Math.random }) {
    this.#oneWayMs = 0;
    this.#jitterMs = 0;
    this.setDelay(oneWayMs, jitterMs);
    this.#random = random;
  }

  /**
   * Change the delay of chunks pushed from now on (the ones queued keep theirs, and order
   * is still kept).
   * @param {number} oneWayMs
   * @param {number} [jitterMs]
   */
  setDelay(oneWayMs, jitterMs = this.#jitterMs) {
    if (!(oneWayMs >= 0) || !(jitterMs >= 0)) throw new RangeError("delays must be ≥ 0 ms");
    this.#oneWayMs = oneWayMs;
    this.#jitterMs = jitterMs;
  }

  /**
   * Queue a chunk that arrived at `nowMs`.
   * @param {T} item
   * @param {number} nowMs
   * @returns {number} when it may leave
   */
  push(item, nowMs) {
    const jitter = this.#jitterMs === 0 ? 0 : (this.#random() * 2 - 1) * this.#jitterMs;
    // Never before the chunk ahead of it: a connection's bytes keep their order.
    const atMs = Math.max(nowMs + Math.max(0, this.#oneWayMs + jitter), this.#lastAtMs);
    this.#lastAtMs = atMs;
    this.#queue.push({ item, atMs });
    return atMs;
  }

  /**
   * The chunks whose time has come, in order, removed from the line.
   * @param {number} nowMs
   * @returns {T[]}
   */
  take(nowMs) {
    let n = 0;
    while (n < this.#queue.length && /** @type {{ atMs: number }} */ (this.#queue[n]).atMs <= nowMs) n++;
    return this.#queue.splice(0, n).map((e) => e.item);
  }

  /** @returns {number | undefined} when the next chunk may leave, undefined when empty */
  nextAtMs() {
    return this.#queue[0]?.atMs;
  }

  get size() {
    return this.#queue.length;
  }
}

/** How late a Node timer typically fires, ms (see flush()). */
const TIMER_SLACK_MS = 1;

/** The marker a line carries for the sender's FIN. */
const END = Symbol("end");

/**
 * Forward `from` → `to` through a delay line, with one timer per direction.
 * @param {import("node:net").Socket} from
 * @param {import("node:net").Socket} to
 * @param {Set<DelayLine<Buffer | symbol>>} lines every live line, so the delay can change
 * @param {{ oneWayMs: number, jitterMs: number }} delay
 */
function pipeDelayed(from, to, lines, delay) {
  /** @type {DelayLine<Buffer | symbol>} */
  const line = new DelayLine(delay);
  lines.add(line);
  from.on("close", () => lines.delete(line));
  /** @type {NodeJS.Timeout | undefined} */
  let timer;
  const flush = () => {
    timer = undefined;
    // Node's timers fire ≈ 1 ms late: release what is due within that millisecond now, so
    // the delay's mean, not its floor, is the one asked for (the RTT check measures it).
    for (const item of line.take(performance.now() + TIMER_SLACK_MS)) {
      if (to.destroyed) return;
      if (typeof item === "symbol")
        to.end(); // END: the sender's FIN
      else to.write(item);
    }
    arm();
  };
  const arm = () => {
    const at = line.nextAtMs();
    if (at === undefined || timer !== undefined) return;
    timer = setTimeout(flush, Math.max(0, at - performance.now() - TIMER_SLACK_MS));
  };
  from.on("data", (/** @type {Buffer} */ chunk) => {
    line.push(chunk, performance.now());
    arm();
  });
  from.on("end", () => {
    line.push(END, performance.now());
    arm();
  });
}

/**
 * Serve the relay in this thread.
 * @param {{ targetPort: number, targetHost?: string, oneWayMs: number, jitterMs?: number }} options
 * @returns {Promise<{ port: number, setOneWay: (ms: number) => void, close: () => Promise<void> }>}
 */
export function serveRelay({ targetPort, targetHost = "127.0.0.1", oneWayMs, jitterMs = 0 }) {
  /** @type {Set<import("node:net").Socket>} */
  const sockets = new Set();
  /** @type {Set<DelayLine<Buffer | symbol>>} */
  const lines = new Set();
  const delay = { oneWayMs, jitterMs };
  const server = createServer({ noDelay: true, allowHalfOpen: true }, (client) => {
    const upstream = createConnection({ port: targetPort, host: targetHost, noDelay: true, allowHalfOpen: true });
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on("close", () => sockets.delete(s));
      s.on("error", () => {
        client.destroy();
        upstream.destroy();
      });
    }
    pipeDelayed(client, upstream, lines, delay);
    pipeDelayed(upstream, client, lines, delay);
    // A closed side closes the other once its delayed bytes are out (end() above), or now
    // when it went away without a FIN.
    client.on("close", (hadError) => hadError && upstream.destroy());
    upstream.on("close", (hadError) => hadError && client.destroy());
  });
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address !== null ? address.port : 0;
      resolve({
        port,
        setOneWay: (ms) => {
          delay.oneWayMs = ms;
          for (const line of lines) line.setDelay(ms);
        },
        close: () =>
          new Promise((done) => {
            for (const s of sockets) s.destroy();
            server.close(() => done());
          }),
      });
    });
  });
}

/**
 * @typedef {object} Relay
 * @property {number} port where clients connect instead of the target
 * @property {number} oneWayMs
 * @property {number} jitterMs
 * @property {(url: string) => string} rewrite the same URL with the relay's host and port
 * @property {(ms: number) => void} setOneWay change the one-way delay (calibration)
 * @property {() => Promise<void>} close
 */

/**
 * Start a relay to `targetPort` in a worker thread of its own.
 * @param {{ targetPort: number, targetHost?: string, rttMs: number, baseMs?: number, jitterMs?: number }} options
 *   `rttMs`: the round trip a no-op request should take through the relay; `baseMs`: what
 *   that no-op takes on loopback without it (see {@link medianMs}), so the relay adds
 *   `rttMs − baseMs`, half each way
 * @returns {Promise<Relay>}
 */
export async function startRelay({ targetPort, targetHost = "127.0.0.1", rttMs, baseMs = 0, jitterMs = 0 }) {
  const oneWayMs = Math.max(0, rttMs - baseMs) / 2;
  const worker = new Worker(new URL(import.meta.url), {
    workerData: { targetPort, targetHost, oneWayMs, jitterMs },
  });
  const port = await new Promise((resolve, reject) => {
    worker.once("message", (/** @type {{ port: number }} */ m) => resolve(m.port));
    worker.once("error", reject);
  });
  /** @type {Relay} */
  const relay = {
    port,
    oneWayMs,
    jitterMs,
    setOneWay: (/** @type {number} */ ms) => {
      relay.oneWayMs = ms;
      worker.postMessage({ oneWayMs: ms });
    },
    rewrite: (url) => {
      const u = new URL(url);
      u.hostname = "127.0.0.1";
      u.port = String(port);
      return u.toString().replace(/\/$/, "");
    },
    close: async () => {
      await worker.terminate();
    },
  };
  return relay;
}

/**
 * A relay whose no-op round trip is the one asked for: it adds `rttMs` less what the no-op
 * takes on loopback, then measures the no-op through it and, up to twice, corrects the delay
 * by what the measurement was off (a loaded machine shifts the no-op's own time between the
 * two measurements). The last measurement decides: `check.ok` false means refuse to measure.
 * @param {{ targetPort: number, rttMs: number, jitterMs?: number, noop: (port: number) => () => Promise<unknown> }} options
 *   `noop(port)`: one no-op round trip to that port (the target's, or the relay's)
 * @returns {Promise<{ relay: Relay, check: Awaited<ReturnType<typeof checkRtt>> }>}
 */
export async function calibratedRelay({ targetPort, rttMs, jitterMs = 0, noop }) {
  const baseMs = await medianMs(noop(targetPort));
  const relay = await startRelay({ targetPort, rttMs, baseMs, jitterMs });
  let check = await checkRtt(rttMs, noop(relay.port));
  for (let attempt = 0; attempt < 2 && !check.ok; attempt++) {
    relay.setOneWay(Math.max(0, relay.oneWayMs + (rttMs - check.rttMs) / 2));
    check = await checkRtt(rttMs, noop(relay.port));
  }
  return { relay, check };
}

/**
 * The median duration of `samples` sequential calls of `once`, after one warm-up, in ms
 * rounded to 0.01.
 * @param {() => Promise<unknown>} once
 * @param {number} [samples]
 */
export async function medianMs(once, samples = 21) {
  await once();
  const times = [];
  for (let i = 0; i < samples; i++) {
    const start = performance.now();
    await once();
    times.push(performance.now() - start);
  }
  times.sort((a, b) => a - b);
  return Math.round(/** @type {number} */ (times[Math.floor(times.length / 2)]) * 100) / 100;
}

/**
 * The RTT a relay produces — the median of a no-op round trip through it — and whether it
 * is within {@link RTT_TOLERANCE_MS} of `wantedMs`.
 * @param {number} wantedMs
 * @param {() => Promise<unknown>} once one no-op round trip through the relay
 * @param {number} [samples]
 * @returns {Promise<{ rttMs: number, ok: boolean, message: string }>}
 */
export async function checkRtt(wantedMs, once, samples = 21) {
  const rttMs = await medianMs(once, samples);
  const ok = Math.abs(rttMs - wantedMs) <= RTT_TOLERANCE_MS;
  const message = ok
    ? `RTT through the relay: median ${rttMs} ms of ${samples} no-op requests (asked ${wantedMs} ms)`
    : `refusing to measure: the relay produces a median RTT of ${rttMs} ms, asked ${wantedMs} ms (more than ${RTT_TOLERANCE_MS} ms off; is the machine overloaded?)`;
  return { rttMs, ok, message };
}

// In the relay's own thread: serve, and tell the parent the port.
const data = /** @type {Record<string, unknown>} */ (isMainThread ? {} : (workerData ?? {}));
if (parentPort !== null && typeof data["targetPort"] === "number") {
  const relay = await serveRelay({
    targetPort: data["targetPort"],
    targetHost: String(data["targetHost"]),
    oneWayMs: Number(data["oneWayMs"]),
    jitterMs: Number(data["jitterMs"]),
  });
  parentPort.on("message", (/** @type {{ oneWayMs: number }} */ m) => relay.setOneWay(m.oneWayMs));
  parentPort.postMessage({ port: relay.port });
}
