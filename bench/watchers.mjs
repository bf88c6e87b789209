/**
 * WebSocket watchers for the benchmark (Node 20 has no global WebSocket: this uses `ws`).
 *
 * Guarantees: a watcher resolves `ready` on the server's `{"type":"ready"}` message (the
 * subscriber is registered by then, SPEC §4 "Watch"), stamps every message with
 * `performance.now()` the moment it is parsed, and hands events to one `onEvent` hook.
 * Opening many sockets is throttled so the handshakes do not starve the server. It
 * acknowledges events in batches (`{"type":"ack","count":N}` every {@link ACK_EVERY} events,
 * docs/coord.md "Flow control"), as a well-behaved reader does, so long runs are not closed
 * with 4008 and acks do not add a message per event to the measured path.
 * It does not reconnect: a closed watcher is a failed measurement, reported as such.
 */
import WebSocket from "ws";

/** Acknowledge after this many events (the server closes at 1,024 unacknowledged). */
export const ACK_EVERY = 256;

/**
 * The fields of a watch message the benchmark reads (trusted, not validated).
 * @typedef {object} WatchMessage
 * @property {string} type `ready`, `event`, …
 * @property {string | number} [generation] the scope's generation after the event
 * @property {boolean} [wantLock] a participant is queued for the write lease
 */

export class Watcher {
  /**
   * @param {string} url ws:// URL of a watch route
   * @param {string} token bearer token
   */
  constructor(url, token) {
    /** @type {((msg: WatchMessage, at: number) => void) | undefined} */
    this.onEvent = undefined;
    /** @type {string | undefined} why the socket closed, if it did */
    this.closed = undefined;
    /** Events received since the socket opened (what `ack` counts). */
    this.events = 0;
    this.ws = new WebSocket(url, { headers: { authorization: `Bearer ${token}` }, perMessageDeflate: false });
    /** @type {Promise<WatchMessage>} resolves on the server's `ready` message */
    this.ready = new Promise((resolve, reject) => {
      this.ws.on("message", (/** @type {Buffer} */ data) => {
        const at = performance.now();
        const msg = /** @type {WatchMessage} */ (JSON.parse(data.toString("utf8")));
        if (msg.type === "ready") resolve(msg);
        else if (msg.type === "event") {
          this.onEvent?.(msg, at);
          if (++this.events % ACK_EVERY === 0) this.ws.send(JSON.stringify({ type: "ack", count: this.events }));
        }
      });
      this.ws.on("unexpected-response", (_req, res) => reject(new Error(`watch refused: HTTP ${res.statusCode}`)));
      this.ws.on("error", reject);
      this.ws.on("close", (code, reason) => {
        this.closed = `${code} ${reason.toString()}`;
        reject(new Error(`watch closed before ready: ${this.closed}`));
      });
    });
    // Awaited by openWatchers; this only keeps a late failure from being "unhandled".
    this.ready.catch(() => undefined);
  }

  close() {
    if (this.ws.readyState === WebSocket.OPEN || this.ws.readyState === WebSocket.CONNECTING) this.ws.close(1000);
  }
}

/**
 * Open `n` watchers on one route, at most `parallel` handshakes at a time, and wait until
 * every one has received `ready`.
 * @param {string} url
 * @param {string} token
 * @param {number} n
 * @param {number} [parallel]
 * @returns {Promise<{watchers: Watcher[], readyMs: number}>}
 */
export async function openWatchers(url, token, n, parallel = 25) {
  const t0 = performance.now();
  const watchers = [];
  for (let i = 0; i < n; i += parallel) {
    const batch = Array.from({ length: Math.min(parallel, n - i) }, () => new Watcher(url, token));
    watchers.push(...batch);
    try {
      await Promise.all(batch.map((w) => w.ready));
    } catch (err) {
      closeAll(watchers);
      throw err;
    }
  }
  return { watchers, readyMs: performance.now() - t0 };
}

/** @param {Watcher[]} watchers */
export function closeAll(watchers) {
  for (const w of watchers) w.close();
}
