/**
 * WebSocket watchers for the benchmark (Node 20 has no global WebSocket: this uses `ws`),
 * of a coord scope or of a claim.
 *
 * Guarantees: a watcher resolves `ready` on the server's opening message — `{"type":"ready"}`
 * for coord, the `{"type":"snapshot"}` for claims — by which time the subscriber is
 * registered (docs/protocol.md#claims, #coord-watch); it stamps every message with `performance.now()` and
 * `Date.now()` the moment it is parsed and hands events to one `onEvent` hook. Opening many
 * sockets is throttled so the handshakes do not starve the server. It acknowledges what it
 * processed every {@link ACK_EVERY} events as docs/protocol.md#operating-at-scale says: coord watchers
 * `{"type":"ack","count":N}` with N the events since the last ack, claims watchers
 * `{"type":"ack","version":"V"}` with V the version of the last event; so long runs are not
 * closed with 4008 and acks do not add a message per event to the measured path.
 * It does not reconnect: a closed watcher is a failed measurement, reported as such.
 */
import WebSocket from "ws";

/** Acknowledge after this many events (the server closes at 1,024 unacknowledged). */
export const ACK_EVERY = 256;

/**
 * The fields of a watch message the benchmark reads (trusted, not validated).
 * @typedef {object} WatchMessage
 * @property {string} type `ready`, `snapshot`, `event`, …
 * @property {string | number} [generation] coord: the scope's generation after the event
 * @property {boolean} [wantLock] coord: a participant is queued for the write lease
 * @property {boolean} [unlocked] coord: the lease was released or expired
 * @property {boolean} [expired] coord: the lease expired
 * @property {unknown} [rootChanged] coord: the new root after a publish that set one, else null
 * @property {string} [reason] claims: `acquired`, `released`, `expired`, …
 * @property {{ version: string, expiresAtMs: number } | null} [claim] claims: the record after the event
 */

/** @typedef {"coord" | "claims"} WatchKind */

export class Watcher {
  /**
   * @param {string} url ws:// URL of a watch route
   * @param {string} token bearer token
   * @param {WatchKind} [kind] which watch (decides the opening message and the ack's form)
   */
  constructor(url, token, kind = "coord") {
    /** @type {((msg: WatchMessage, at: number, wallMs: number) => void) | undefined} */
    this.onEvent = undefined;
    /** @type {((code: number, reason: string) => void) | undefined} called once the socket closes */
    this.onClose = undefined;
    /** @type {string | undefined} why the socket closed, if it did */
    this.closed = undefined;
    /** Events received since the socket opened. */
    this.events = 0;
    /** Events processed since the last ack (coord's ack count). */
    this.unacked = 0;
    /** @type {string | undefined} version of the last claims event processed */
    this.lastVersion = undefined;
    this.kind = kind;
    this.ws = new WebSocket(url, { headers: { authorization: `Bearer ${token}` }, perMessageDeflate: false });
    /** @type {Promise<WatchMessage>} resolves on the server's `ready` message */
    this.ready = new Promise((resolve, reject) => {
      this.ws.on("message", (/** @type {Buffer} */ data) => {
        const at = performance.now();
        const wallMs = Date.now();
        const msg = /** @type {WatchMessage} */ (JSON.parse(data.toString("utf8")));
        if (msg.type === (kind === "coord" ? "ready" : "snapshot")) resolve(msg);
        else if (msg.type === "event") {
          this.events++;
          if (msg.claim) this.lastVersion = msg.claim.version;
          this.onEvent?.(msg, at, wallMs);
          if (++this.unacked >= ACK_EVERY) this.ack();
        }
      });
      this.ws.on("unexpected-response", (_req, res) => reject(new Error(`watch refused: HTTP ${res.statusCode}`)));
      this.ws.on("error", reject);
      this.ws.on("close", (code, reason) => {
        this.closed = `${code} ${reason.toString()}`;
        this.onClose?.(code, reason.toString());
        reject(new Error(`watch closed before ready: ${this.closed}`));
      });
    });
    // Awaited by openWatchers; this only keeps a late failure from being "unhandled".
    this.ready.catch(() => undefined);
  }

  /** Acknowledge every event processed so far (docs/protocol.md#operating-at-scale), in this watch's form. */
  ack() {
    if (this.unacked === 0 || this.ws.readyState !== WebSocket.OPEN) return;
    const ack =
      this.kind === "coord" ? { type: "ack", count: this.unacked } : { type: "ack", version: this.lastVersion };
    this.unacked = 0;
    this.ws.send(JSON.stringify(ack));
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
 * @param {WatchKind} [kind]
 * @returns {Promise<{watchers: Watcher[], readyMs: number}>}
 */
export async function openWatchers(url, token, n, parallel = 25, kind = "coord") {
  const t0 = performance.now();
  const watchers = [];
  for (let i = 0; i < n; i += parallel) {
    const batch = Array.from({ length: Math.min(parallel, n - i) }, () => new Watcher(url, token, kind));
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
