/**
 * A coord watch over a WebSocket that survives drops: the iterable behind
 * `HttpCoordinator.watch`.
 *
 * Guarantees:
 * - `ready` resolves when the server confirmed the registration (`{"type":"ready"}`), so
 *   nothing that happens afterwards is missed. If the first connection cannot be made it
 *   rejects: with the server's error when an HTTP probe of the scope is refused
 *   (`unauthorized`, `forbidden`, `invalid_request`, `unsupported`, …), else after
 *   `initialAttempts` tries with a network error (code `internal`, `details.network`).
 * - Events come in server order. After a dropped connection, a silent one (no pong within a
 *   ping interval) or a 4008 close ("too slow"), it reconnects with
 *   `afterGeneration = <highest generation seen>`, so the server replays every publish that
 *   was missed; a publish at or below that generation is never yielded twice.
 * - `close()` ends the iteration cleanly; the signal aborting ends it with the signal's
 *   reason; a permanent refusal on reconnect ends it with that error.
 *
 * Does not: recover `wantLock`/`unlocked` events that happened while disconnected (they are
 * hints, not history); bound its buffer (the server closes laggards with 4008).
 */
import type { Clock } from "../../core/clock.ts";
import { parseCounter } from "../../protocol/counter.ts";
import { ShiftlockError } from "../../protocol/errors.ts";
import type { WebSocketLike } from "./claim-watch-socket.ts";
import { closeQuietly, parseFrame, pingUntilSilent } from "./socket-keepalive.ts";
import { decodeEvent } from "../coord/coord-decode.ts";
import type { CoordEvent, CoordWatch } from "../coord/coord-types.ts";
import { WatchQueue } from "./watch-queue.ts";

export interface CoordSocketWatchOptions {
  /** Watch URL for a resume point. */
  url: (afterGeneration: bigint) => string;
  connect: (url: string) => WebSocketLike;
  /** Called after a connection that never became ready: rejects when the refusal is permanent. */
  probe: (signal: AbortSignal) => Promise<void>;
  clock: Clock;
  afterGeneration: bigint;
  signal?: AbortSignal | undefined;
  pingIntervalMs: number;
  reconnectMinMs: number;
  reconnectMaxMs: number;
  /** Connection attempts before the first `ready` gives up (default 3). */
  initialAttempts?: number;
  onEnd?: () => void;
}

const PERMANENT = ["unauthorized", "forbidden", "invalid_request", "not_found", "unsupported"];

export class SocketCoordWatch implements CoordWatch {
  /** Resolves on the first `ready`; rejects when the watch could not be established. */
  readonly ready: Promise<void>;
  private readonly queue: WatchQueue<CoordEvent>;
  private readonly stop = new AbortController();
  private last: bigint;
  private isReady = false;
  private resolveReady!: () => void;
  private rejectReady!: (err: unknown) => void;
  private socket: WebSocketLike | undefined;

  constructor(private readonly options: CoordSocketWatchOptions) {
    this.last = options.afterGeneration;
    this.ready = new Promise<void>((resolve, reject) => {
      this.resolveReady = resolve;
      this.rejectReady = reject;
    });
    this.ready.catch(() => undefined); // the owner awaits it; never an unhandled rejection
    this.queue = new WatchQueue<CoordEvent>(() => this.shutdown());
    const signal = options.signal;
    if (signal?.aborted === true) {
      this.end(signal.reason);
      return;
    }
    signal?.addEventListener("abort", () => this.end(signal.reason), { once: true });
    void this.run();
  }

  get afterGeneration(): bigint {
    return this.last;
  }

  /** True once the watch stopped (closed, aborted or failed). */
  get ended(): boolean {
    return this.stop.signal.aborted;
  }

  close(): void {
    this.queue.close();
  }

  [Symbol.asyncIterator](): AsyncIterator<CoordEvent> {
    return this.queue[Symbol.asyncIterator]();
  }

  private end(err: unknown): void {
    if (!this.isReady) this.rejectReady(err);
    this.queue.fail(err);
    this.shutdown();
  }

  private shutdown(): void {
    if (this.stop.signal.aborted) return;
    // Take the socket before aborting: the session's abort handler forgets it.
    const socket = this.socket;
    this.socket = undefined;
    this.stop.abort();
    if (!this.isReady) this.rejectReady(new ShiftlockError("invalid_request", "watch closed before it was ready"));
    if (socket !== undefined) closeQuietly(socket);
    this.options.onEnd?.();
  }

  private async run(): Promise<void> {
    const initialAttempts = this.options.initialAttempts ?? 3;
    let failures = 0;
    while (!this.stop.signal.aborted) {
      const startedAtMs = this.options.clock.nowMs();
      const becameReady = await this.session();
      if (this.stop.signal.aborted) return;
      // A connection that was ready for a while resumes at once; one that keeps dropping
      // right after ready backs off like a failure (no hot reconnect loop).
      const healthy = becameReady && this.options.clock.nowMs() - startedAtMs >= this.options.reconnectMinMs;
      if (healthy) {
        failures = 0;
      } else if (becameReady) {
        failures++;
      } else {
        failures++;
        try {
          await this.options.probe(this.stop.signal);
        } catch (err) {
          if (this.stop.signal.aborted) return;
          if (err instanceof ShiftlockError && PERMANENT.includes(err.code)) {
            this.end(err);
            return;
          }
          if (!this.isReady && failures >= initialAttempts) {
            this.end(err);
            return;
          }
        }
        if (!this.isReady && failures >= initialAttempts) {
          this.end(new ShiftlockError("internal", "watch connection failed", { network: true }));
          return;
        }
      }
      const ceiling = Math.min(
        this.options.reconnectMaxMs,
        this.options.reconnectMinMs * 2 ** Math.max(0, failures - 1),
      );
      // Jitter spreads the reconnects of many watchers after a server restart.
      if (healthy) continue;
      const delay = ceiling / 2 + Math.random() * (ceiling / 2);
      try {
        await this.options.clock.sleep(delay, this.stop.signal);
      } catch {
        return;
      }
    }
  }

  /** One connection, from open to close. Resolves whether it became ready. */
  private session(): Promise<boolean> {
    return new Promise<boolean>((resolve) => {
      let readyHere = false;
      const sessionEnd = new AbortController();
      let socket: WebSocketLike;
      try {
        socket = this.options.connect(this.options.url(this.last));
      } catch {
        resolve(false);
        return;
      }
      this.socket = socket;
      let heard = true;
      const finish = (): void => {
        if (sessionEnd.signal.aborted) return;
        sessionEnd.abort();
        this.stop.signal.removeEventListener("abort", finish);
        if (this.socket === socket) this.socket = undefined;
        resolve(readyHere);
      };
      this.stop.signal.addEventListener("abort", finish, { once: true });
      socket.addEventListener("open", () => {
        void pingUntilSilent(socket, this.options.clock, this.options.pingIntervalMs, sessionEnd.signal, () => {
          const alive = heard;
          heard = false;
          return alive;
        });
      });
      socket.addEventListener("message", (event) => {
        heard = true;
        const kind = this.onMessage(event.data);
        if (kind === "ready") readyHere = true;
        else if (kind === "bad") closeQuietly(socket);
      });
      socket.addEventListener("close", finish);
      // `error` is always followed by `close` (WHATWG); listening keeps `ws` from throwing.
      socket.addEventListener("error", () => {});
    });
  }

  private onMessage(data: unknown): "ready" | "event" | "other" | "bad" {
    const message = parseFrame(data);
    if (message === undefined) return "bad";
    const type = (message as { type?: unknown }).type;
    if (type === "ready") {
      // Resuming past the server's current generation would hide its next publishes.
      const raw = (message as { generation?: unknown }).generation;
      const current = typeof raw === "string" ? parseCounter(raw) : undefined;
      if (current !== undefined && current < this.last) this.last = current;
      if (!this.isReady) {
        this.isReady = true;
        this.resolveReady();
      }
      return "ready";
    }
    if (type !== "event") return "other";
    let event: CoordEvent;
    try {
      event = decodeEvent(message);
    } catch (err) {
      // A malformed event is a server bug: surface it rather than guess.
      this.end(err);
      return "bad";
    }
    const publish = !event.wantLock && !event.unlocked;
    if (publish && event.generation <= this.last) return "event"; // replayed again after a reconnect
    if (event.generation > this.last) this.last = event.generation;
    this.queue.push(event);
    return "event";
  }
}
