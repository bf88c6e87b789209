/**
 * The one reconnecting watch socket of the client: the connection, keep-alive, reconnect
 * and flow-control half of both watches (claims and coord). What a message means, where to
 * resume and how to acknowledge is the job of a small {@link WatchAdapter}.
 *
 * Guarantees:
 * - Messages are decoded with the route's server-message schema. A message of a type the
 *   schema does not know is skipped (a newer server may add some); a known type that does
 *   not decode ends the watch with `internal` (a server bug: surfaced, never guessed at).
 * - Reconnects after a dropped connection, a silent one (nothing, not even the pong, for a
 *   whole ping interval; a `{"type":"ping"}` goes out every interval), a handshake that did
 *   not complete within one interval, or a 4008 close ("too slow"). Every reconnect asks
 *   the adapter for the URL, which carries its resume point. A connection that stayed up
 *   at least `reconnectMinMs` reconnects at once; one that failed or dropped sooner waits
 *   through the client's one {@link Backoff} (`reconnectMinMs` … `reconnectMaxMs`, jittered).
 * - After a connection that was never established, one HTTP probe (the adapter's) tells a
 *   permanent refusal (`unauthorized`, `forbidden`, `invalid_request`, `not_found`,
 *   `unsupported`) from a transient one: a permanent refusal ends the watch with it. With
 *   `initialAttempts`, a watch that never got established gives up after that many tries.
 * - Flow control (docs/protocol.md#watch-flow-control): the server counts the event messages it sent; every
 *   {@link ACK_EVERY} events *processed* on the current connection — taken by the consumer,
 *   or dropped by the adapter as already seen — are acknowledged with the adapter's ack
 *   message. So only a consumer that really stopped reading is closed with 4008, and after
 *   a 4008 the watch reconnects once the consumer has taken everything buffered: a slow
 *   consumer costs bounded memory and loses nothing.
 * - `close()` (or `break` in a `for await`) ends the iteration cleanly; the signal aborting
 *   ends it with the signal's reason. Either way the socket and timers are released. A
 *   message the adapter calls final ends it cleanly, its connection dropped without waiting
 *   for the server's close.
 *
 * Does not: bound its buffer by itself (the server bounds what it sends unacknowledged), or
 * know what a resume point is (the adapter does).
 */
import type { z } from "zod";
import type { Clock } from "../../core/clock.ts";
import { ShiftlockError } from "../../protocol/errors.ts";
import { LAGGING_CLOSE_CODE } from "../../protocol/watch.ts";
import { Backoff } from "./backoff.ts";
import { closeQuietly, parseFrame, pingUntilSilent } from "./socket-keepalive.ts";
import { WatchQueue } from "./watch-queue.ts";
import { OPEN, type SocketOpener, type WebSocketLike } from "./websocket.ts";

/** Acknowledge after this many processed events (the server tolerates at least 1,024 unacknowledged). */
export const ACK_EVERY = 128;

const PERMANENT = ["unauthorized", "forbidden", "invalid_request", "not_found", "unsupported"];

/** What the adapter made of one server message. */
export interface Receipt<T> {
  /** Items for the consumer, in order. */
  items: readonly T[];
  /** The message is one of the events the server counts for flow control. */
  event: boolean;
  /** The message shows the connection is established (claims: anything arrived; coord: `ready`). */
  established: boolean;
  /**
   * The server ends the watch with this message and closes the connection itself (the lease
   * channel's `ended`): no reconnect; the connection is dropped (`terminate`, where the
   * socket has it; else the server's close ends it) and the watch ends cleanly then.
   */
  final?: boolean;
}

/** The watch-specific half: resume point, meaning of messages, acknowledgement. */
export interface WatchAdapter<M, C, T> {
  /** URL of the next connection (it carries the resume point); asked just before the connection is opened. */
  url(): string;
  /** After a connection that was never established: reject with the refusal, if any. */
  probe(signal: AbortSignal): Promise<void>;
  /** One decoded message. `resumed`: an earlier connection of this watch was established. */
  receive(message: M, resumed: boolean): Receipt<T>;
  /** The consumer took `item`. */
  taken(item: T): void;
  /** The acknowledgement of `count` events processed since the last one (undefined: none to send). */
  ack(count: number): C | undefined;
  /** A keep-alive ping is about to go out on the current connection (the lease channel times them). */
  pinged?(): void;
}

export interface WatchSocketOptions<M, C> {
  /** What the server sends (decoded) and what the client sends (encoded): the route's schemas. */
  server: z.ZodType<M>;
  client: z.ZodType<C>;
  /** Open an authenticated socket (see websocket.ts); may first ask for a watch ticket. */
  connect: SocketOpener;
  clock: Clock;
  signal?: AbortSignal | undefined;
  pingIntervalMs: number;
  reconnectMinMs: number;
  reconnectMaxMs: number;
  /** Give up after this many failed attempts if no connection was ever established (default: never). */
  initialAttempts?: number | undefined;
  /** Called once when the watch ends for any reason. */
  onEnd?: (() => void) | undefined;
}

interface Entry<T> {
  value: T;
  /** The connection that delivered it (acks count only the current connection's events). */
  connection: number;
  event: boolean;
}

interface Outcome {
  established: boolean;
  /** The close code (0 when the socket could not even be created). */
  code: number;
}

export class WatchSocket<M, C, T> implements AsyncIterable<T> {
  /** Resolves when a connection is first established; rejects when the watch ends before. */
  readonly established: Promise<void>;
  private readonly queue: WatchQueue<Entry<T>>;
  private readonly stop = new AbortController();
  private socket: WebSocketLike | undefined;
  private connection = 0;
  private everEstablished = false;
  /** The server sent its final message: the watch ends when this connection closes. */
  private finalReceived = false;
  /** Events processed on the current connection since its last ack. */
  private processed = 0;
  private resolveEstablished!: () => void;
  private rejectEstablished!: (err: unknown) => void;

  constructor(
    private readonly adapter: WatchAdapter<M, C, T>,
    private readonly options: WatchSocketOptions<M, C>,
  ) {
    this.established = new Promise<void>((resolve, reject) => {
      this.resolveEstablished = resolve;
      this.rejectEstablished = reject;
    });
    this.established.catch(() => undefined); // owners may not await it: never an unhandled rejection
    this.queue = new WatchQueue<Entry<T>>(
      () => this.shutdown(),
      (entry) => this.onTaken(entry),
    );
    const signal = options.signal;
    if (signal?.aborted === true) {
      this.end(signal.reason);
      return;
    }
    signal?.addEventListener("abort", () => this.end(signal.reason), { once: true });
    void this.run();
  }

  /** True once the watch stopped (closed, aborted or failed). */
  get ended(): boolean {
    return this.stop.signal.aborted;
  }

  close(): void {
    this.queue.close();
  }

  [Symbol.asyncIterator](): AsyncIterator<T> {
    const inner = this.queue[Symbol.asyncIterator]();
    return {
      next: async () => {
        const r = await inner.next();
        return r.done === true ? { done: true, value: undefined } : { done: false, value: r.value.value };
      },
      return: async () => {
        await inner.return?.();
        return { done: true, value: undefined };
      },
    };
  }

  /** End the watch with `err` (after what is buffered). */
  private end(err: unknown): void {
    this.rejectEstablished(err);
    this.queue.fail(err);
    this.shutdown();
  }

  private shutdown(): void {
    if (this.stop.signal.aborted) return;
    // Take the socket first: aborting `stop` ends the connection, which forgets it.
    const socket = this.socket;
    this.socket = undefined;
    this.stop.abort();
    // Only an error that can still reach someone is built (its stack trace is not free).
    if (!this.everEstablished) {
      this.rejectEstablished(new ShiftlockError("invalid_request", "watch closed before it was established"));
    }
    if (socket !== undefined) closeQuietly(socket);
    this.options.onEnd?.();
  }

  private onTaken(entry: Entry<T>): void {
    this.adapter.taken(entry.value);
    if (entry.event && entry.connection === this.connection) this.countProcessed();
  }

  /** One more event processed on the current connection; acknowledge every {@link ACK_EVERY}. */
  private countProcessed(): void {
    this.processed++;
    if (this.processed < ACK_EVERY) return;
    const socket = this.socket;
    const ack = this.adapter.ack(this.processed);
    if (socket === undefined || socket.readyState !== OPEN || ack === undefined) return;
    try {
      socket.send(JSON.stringify(this.options.client.encode(ack)));
      this.processed = 0;
    } catch {
      // The socket is going away; the next connection starts from a fresh count anyway.
    }
  }

  private async run(): Promise<void> {
    const { clock, reconnectMinMs, initialAttempts } = this.options;
    const backoff = new Backoff({ minMs: reconnectMinMs, maxMs: this.options.reconnectMaxMs });
    let failures = 0;
    while (!this.stop.signal.aborted) {
      const startedAtMs = clock.nowMs();
      const outcome = await this.connectOnce();
      if (this.stop.signal.aborted) return;
      if (this.finalReceived) {
        this.queue.end();
        this.shutdown();
        return;
      }
      if (outcome.code === LAGGING_CLOSE_CODE) {
        // Too slow: resume only once the consumer caught up with what is already buffered.
        await this.drainedOrStopped();
        backoff.reset();
        continue;
      }
      if (outcome.established) {
        failures = 0;
        // A connection that was up for a while resumes at once; one that keeps dropping
        // right after opening backs off like a failure (no hot reconnect loop).
        if (clock.nowMs() - startedAtMs >= reconnectMinMs) {
          backoff.reset();
          continue;
        }
      } else {
        failures++;
        const refusal = await this.probe();
        if (this.stop.signal.aborted) return;
        if (refusal instanceof ShiftlockError && PERMANENT.includes(refusal.code)) return this.end(refusal);
        if (!this.everEstablished && initialAttempts !== undefined && failures >= initialAttempts) {
          return this.end(refusal ?? new ShiftlockError("internal", "watch connection failed", { network: true }));
        }
      }
      try {
        await clock.sleep(backoff.next(), this.stop.signal);
      } catch {
        return;
      }
    }
  }

  /** The probe's refusal, or undefined when it found nothing wrong. */
  private async probe(): Promise<unknown> {
    try {
      await this.adapter.probe(this.stop.signal);
      return undefined;
    } catch (err) {
      return err;
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

  /** One connection, from open (after its ticket, when one is asked for first) to close. */
  private connectOnce(): Promise<Outcome> {
    let opened: WebSocketLike | Promise<WebSocketLike>;
    try {
      opened = this.options.connect(this.adapter.url(), this.stop.signal);
    } catch {
      return Promise.resolve({ established: false, code: 0 });
    }
    if (!(opened instanceof Promise)) return this.attach(opened);
    return opened.then(
      (socket) => {
        if (!this.stop.signal.aborted) return this.attach(socket);
        closeQuietly(socket);
        return { established: false, code: 0 };
      },
      () => ({ established: false, code: 0 }),
    );
  }

  /** Follow one opened socket until it closes. */
  private attach(socket: WebSocketLike): Promise<Outcome> {
    return new Promise<Outcome>((resolve) => {
      const outcome: Outcome = { established: false, code: 0 };
      const id = ++this.connection;
      const resumed = this.everEstablished;
      this.processed = 0;
      const connectionEnd = new AbortController();
      this.socket = socket;
      let heardSincePing = true;
      const finish = (): void => {
        if (connectionEnd.signal.aborted) return;
        // Long-lived watches reconnect many times: never accumulate listeners on `stop`.
        this.stop.signal.removeEventListener("abort", finish);
        connectionEnd.abort();
        if (this.socket === socket) this.socket = undefined;
        resolve(outcome);
      };
      this.stop.signal.addEventListener("abort", finish, { once: true });
      const { clock, pingIntervalMs } = this.options;
      // A handshake that hangs (a black-holed SYN, a stuck proxy) is abandoned after one interval.
      clock.sleep(pingIntervalMs, connectionEnd.signal).then(
        () => {
          if (socket.readyState !== OPEN) closeQuietly(socket);
        },
        () => {},
      );
      socket.addEventListener("open", () => {
        void pingUntilSilent(
          socket,
          clock,
          pingIntervalMs,
          connectionEnd.signal,
          () => {
            const alive = heardSincePing;
            heardSincePing = false;
            return alive;
          },
          () => this.adapter.pinged?.(),
        );
      });
      socket.addEventListener("message", (event) => {
        heardSincePing = true;
        if (this.onFrame(event.data, id, resumed)) outcome.established = true;
        // Nothing more will come: drop the connection rather than wait on the server's close
        // (a process would stay up until the TCP connection ends). Without `terminate` the
        // server's close ends it.
        if (this.finalReceived) socket.terminate?.();
      });
      socket.addEventListener("close", (event) => {
        outcome.code = event.code;
        finish();
      });
      // `error` is always followed by `close` (WHATWG); listening keeps `ws` from throwing.
      socket.addEventListener("error", () => {});
    });
  }

  /** Decode and hand one frame to the adapter; true when it establishes the connection. */
  private onFrame(data: unknown, connection: number, resumed: boolean): boolean {
    if (this.stop.signal.aborted) return false;
    const frame = parseFrame(data);
    if (frame === undefined) return false; // not ours to interpret: the server only sends JSON objects
    const decoded = this.options.server.safeDecode(frame);
    if (!decoded.success) {
      const issue = decoded.error.issues[0];
      if (issue?.code === "invalid_union" && issue.path.join(".") === "type") return false; // a newer message type
      this.end(malformed(`${issue?.path.map(String).join(".") ?? ""}: ${issue?.message ?? "invalid"}`));
      return false;
    }
    let receipt: Receipt<T>;
    try {
      receipt = this.adapter.receive(decoded.data, resumed);
    } catch (err) {
      this.end(err instanceof ShiftlockError ? err : malformed(String(err)));
      return false;
    }
    if (receipt.established && !this.everEstablished) {
      this.everEstablished = true;
      this.resolveEstablished();
    }
    if (receipt.final === true) this.finalReceived = true;
    for (const value of receipt.items) this.queue.push({ value, connection, event: receipt.event });
    // An event the adapter dropped (already seen) is processed as it arrives.
    if (receipt.event && receipt.items.length === 0) this.countProcessed();
    return receipt.established;
  }
}

function malformed(what: string): ShiftlockError {
  return new ShiftlockError("internal", `malformed watch message: ${what}`);
}
