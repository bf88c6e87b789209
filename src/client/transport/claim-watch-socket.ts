/**
 * A claim watch over a WebSocket that survives drops: the iterable behind
 * `HttpClaimsBackend.watchClaim`.
 *
 * Guarantees:
 * - Yields a snapshot first (unless started with `afterVersion`), then events in version
 *   order. Across a dropped connection or a 4008 close ("too slow") it reconnects with
 *   `afterVersion = <last version seen>`, so the server replays exactly what was missed:
 *   no gap, and events at or below the last version seen are discarded, so no duplicate.
 * - When the server's history no longer reaches the last version, its `truncated`
 *   snapshot is passed to the consumer (`truncated: true`): events were missed and the
 *   snapshot is the new baseline.
 * - Sends `{"type":"ping"}` every `pingIntervalMs` so NATs and proxies keep the connection;
 *   a connection that received nothing (not even the pong) for a whole interval, or whose
 *   handshake did not complete within one interval, is considered dead and replaced.
 * - Reconnects with exponential backoff (jittered, `reconnectMinMs` … `reconnectMaxMs`).
 *   When a connection fails before delivering anything, one HTTP probe of the claim tells a
 *   permanent refusal (`unauthorized`, `forbidden`, `invalid_request`, `not_found`) from a
 *   transient one; a permanent refusal ends the iteration with that error.
 * - Flow control: every {@link ACK_EVERY} events the consumer has *taken* are acknowledged
 *   with `{"type":"ack","version":"N"}`, so the server closes with 4008 only a consumer that
 *   really stopped reading; after a 4008 the watch reconnects once the consumer has drained
 *   what is buffered, so a slow consumer costs bounded memory and loses nothing.
 * - `close()` ends the iteration cleanly; the signal aborting ends it with the signal's
 *   reason. Either way the socket and timers are released.
 *
 * Does not: bound its buffer (a consumer that stops reading keeps items in memory; the
 * server bounds what it sends), or tell the server anything but pings.
 */
import type { Clock } from "../../core/clock.ts";
import { hasCode } from "../../protocol/errors.ts";
import { LAGGING_CLOSE_CODE } from "../../protocol/watch.ts";
import { closeQuietly, parseFrame, pingUntilSilent } from "./socket-keepalive.ts";
import type { ClaimWatch, ClaimWatchItem } from "../claims/claims-backend.ts";
import { decodeClaim } from "../claims/decode.ts";
import { WatchQueue } from "./watch-queue.ts";

/** The part of the WHATWG WebSocket the client uses (browsers, Workers, Node 22, `ws`). */
export interface WebSocketLike {
  readonly readyState: number;
  send(data: string): void;
  close(code?: number, reason?: string): void;
  addEventListener(type: "open" | "error", listener: () => void): void;
  addEventListener(type: "message", listener: (event: { data: unknown }) => void): void;
  addEventListener(type: "close", listener: (event: { code: number; reason: string }) => void): void;
}

/**
 * A WebSocket constructor. The third argument is what the `ws` package accepts (headers);
 * browser constructors ignore it.
 */
export type WebSocketConstructor = new (
  url: string,
  protocols?: string | string[],
  options?: { headers?: Record<string, string> },
) => WebSocketLike;

export interface SocketWatchOptions {
  /** URL of the watch for a given resume point (undefined: start with a snapshot). */
  url: (afterVersion: bigint | undefined) => string;
  /** Open a socket to `url`. */
  connect: (url: string) => WebSocketLike;
  /** After a connection that never delivered anything: reject when the refusal is permanent. */
  probe: (signal: AbortSignal) => Promise<void>;
  clock: Clock;
  afterVersion?: bigint | undefined;
  signal?: AbortSignal | undefined;
  pingIntervalMs: number;
  reconnectMinMs: number;
  reconnectMaxMs: number;
  /** Called when the watch ends for any reason (lets the backend forget it). */
  onEnd?: () => void;
}

const OPEN = 1;
/** Acknowledge after this many consumed events (the server tolerates 1,024 unacknowledged). */
export const ACK_EVERY = 128;
const PERMANENT = ["unauthorized", "forbidden", "invalid_request", "not_found"] as const;

interface SessionOutcome {
  /** True when the connection delivered at least one message. */
  delivered: boolean;
  /** The close code (0 when the socket could not even be created). */
  code: number;
}

export class SocketClaimWatch implements ClaimWatch {
  private readonly queue: WatchQueue<ClaimWatchItem>;
  private readonly stop = new AbortController();
  private lastVersion: bigint | undefined;
  private snapshotDelivered = false;
  private socket: WebSocketLike | undefined;

  constructor(private readonly options: SocketWatchOptions) {
    this.lastVersion = options.afterVersion;
    this.queue = new WatchQueue(
      () => this.shutdown(),
      (item) => this.onTaken(item),
    );
    const signal = options.signal;
    if (signal?.aborted === true) {
      this.queue.fail(signal.reason);
      this.shutdown();
      return;
    }
    signal?.addEventListener("abort", () => this.abort(signal.reason), { once: true });
    void this.run();
  }

  /** True once the watch stopped (closed, aborted or failed). */
  get ended(): boolean {
    return this.stop.signal.aborted;
  }

  /** The version of the last item received (the resume point). */
  get resumeVersion(): bigint | undefined {
    return this.lastVersion;
  }

  close(): void {
    this.queue.close();
  }

  [Symbol.asyncIterator](): AsyncIterator<ClaimWatchItem> {
    return this.queue[Symbol.asyncIterator]();
  }

  private consumedSinceAck = 0;

  /** Acknowledge consumed events in batches (flow control, see module doc). */
  private onTaken(item: ClaimWatchItem): void {
    if (item.type !== "event") return;
    this.consumedSinceAck++;
    if (this.consumedSinceAck < ACK_EVERY) return;
    const socket = this.socket;
    if (socket === undefined || socket.readyState !== OPEN) return;
    try {
      socket.send(JSON.stringify({ type: "ack", version: item.claim.version.toString() }));
      this.consumedSinceAck = 0;
    } catch {
      // The socket is going away; the next connection starts from a fresh count anyway.
    }
  }

  private abort(reason: unknown): void {
    this.queue.fail(reason);
    this.shutdown();
  }

  private shutdown(): void {
    if (this.stop.signal.aborted) return;
    // Take the socket first: aborting `stop` ends the session, which forgets it.
    const socket = this.socket;
    this.socket = undefined;
    this.stop.abort();
    if (socket !== undefined) closeQuietly(socket);
    this.options.onEnd?.();
  }

  private async run(): Promise<void> {
    let attempt = 0;
    while (!this.stop.signal.aborted) {
      const outcome = await this.session();
      if (this.stop.signal.aborted) return;
      if (outcome.code === LAGGING_CLOSE_CODE) {
        // Too slow: resume only once the consumer caught up with what we already hold.
        await this.drainedOrStopped();
        if (this.stop.signal.aborted) return;
        attempt = 0;
        continue;
      }
      if (outcome.delivered) {
        attempt = 0;
      } else {
        try {
          await this.options.probe(this.stop.signal);
        } catch (err) {
          if (this.stop.signal.aborted) return;
          if (PERMANENT.some((code) => hasCode(err, code))) {
            this.abort(err);
            return;
          }
        }
      }
      const ceiling = Math.min(this.options.reconnectMaxMs, this.options.reconnectMinMs * 2 ** attempt);
      attempt = Math.min(attempt + 1, 30);
      // Jitter spreads the reconnects of many watchers after a server restart.
      const delay = ceiling / 2 + Math.random() * (ceiling / 2);
      try {
        await this.options.clock.sleep(delay, this.stop.signal);
      } catch {
        return;
      }
    }
  }

  private drainedOrStopped(): Promise<void> {
    return new Promise((resolve) => {
      const signal = this.stop.signal;
      if (signal.aborted) return resolve();
      const done = (): void => {
        signal.removeEventListener("abort", done);
        resolve();
      };
      signal.addEventListener("abort", done, { once: true });
      void this.queue.drained().then(done);
    });
  }

  /** One connection, from open to close. */
  private session(): Promise<SessionOutcome> {
    return new Promise<SessionOutcome>((resolve) => {
      const outcome: SessionOutcome = { delivered: false, code: 0 };
      const sessionEnd = new AbortController();
      let socket: WebSocketLike;
      try {
        socket = this.options.connect(this.options.url(this.lastVersion));
      } catch {
        resolve(outcome);
        return;
      }
      this.socket = socket;
      let receivedSincePing = true;
      const finish = (): void => {
        if (sessionEnd.signal.aborted) return;
        // Long-lived watches reconnect many times: never accumulate listeners on `stop`.
        this.stop.signal.removeEventListener("abort", finish);
        sessionEnd.abort();
        if (this.socket === socket) this.socket = undefined;
        resolve(outcome);
      };
      this.stop.signal.addEventListener("abort", finish, { once: true });
      // A handshake that hangs (a black-holed SYN, a stuck proxy) is abandoned after one interval.
      this.options.clock.sleep(this.options.pingIntervalMs, sessionEnd.signal).then(
        () => {
          if (socket.readyState !== OPEN) closeQuietly(socket);
        },
        () => {},
      );
      socket.addEventListener("open", () => {
        void pingUntilSilent(socket, this.options.clock, this.options.pingIntervalMs, sessionEnd.signal, () => {
          const alive = receivedSincePing;
          receivedSincePing = false;
          return alive;
        });
      });
      socket.addEventListener("message", (event) => {
        receivedSincePing = true;
        outcome.delivered = true;
        this.onMessage(event.data);
      });
      socket.addEventListener("close", (event) => {
        outcome.code = event.code;
        finish();
      });
      // `error` is always followed by `close` (WHATWG); listening keeps `ws` from throwing.
      socket.addEventListener("error", () => {});
    });
  }

  private onMessage(data: unknown): void {
    const message = parseFrame(data);
    if (message === undefined) return; // Not ours to interpret; the server only sends JSON.
    const m = message as { type?: unknown; claim?: unknown; truncated?: unknown; reason?: unknown; timeMs?: unknown };
    try {
      if (m.type === "snapshot") this.onSnapshot(m.claim, m.truncated === true);
      else if (m.type === "event") this.onEvent(m.reason, m.claim, m.timeMs);
    } catch (err) {
      // A malformed record is a server bug: surface it rather than guess.
      this.abort(err);
    }
  }

  private onSnapshot(wire: unknown, truncated: boolean): void {
    const claim = wire === null || wire === undefined ? null : decodeClaim(wire);
    const version = claim?.version ?? 0n;
    // A resumed connection that lost nothing may re-send the baseline: not news.
    const news = !this.snapshotDelivered || truncated || this.lastVersion === undefined || version > this.lastVersion;
    this.lastVersion = version;
    if (!news) return;
    this.snapshotDelivered = true;
    this.queue.push({ type: "snapshot", claim, truncated });
  }

  private onEvent(reason: unknown, wire: unknown, timeMs: unknown): void {
    const claim = decodeClaim(wire);
    if (this.lastVersion !== undefined && claim.version <= this.lastVersion) return; // replayed twice
    this.lastVersion = claim.version;
    this.queue.push({
      type: "event",
      reason: reason as Extract<ClaimWatchItem, { type: "event" }>["reason"],
      claim,
      timeMs: typeof timeMs === "number" ? timeMs : 0,
    });
  }
}
