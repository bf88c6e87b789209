/**
 * The lease channel's server side in process (docs/protocol.md#sessions), for
 * `MemoryClaimsBackend`: in-memory sockets that the client's own lease channel
 * (lease-channel.ts, over the one watch socket) connects to, so a session kept over the
 * channel runs the same client code against the in-memory backend as against the service.
 *
 * Guarantees:
 * - Opening a socket is a keepalive of its ttl (a refusal — `generation_not_found`,
 *   `invalid_state` — fails the opening, as a refused upgrade does: `error`, then `close`
 *   without `open`); the first message is `{"type":"generation"}` with the record.
 * - Each `{"type":"ping"}` is answered `{"type":"pong"}` and, while the lease is live,
 *   extends it to at least now + ttl, as the object does with the last ping's time; a ping
 *   after the deadline extends nothing (the lease has ended and its channels close).
 * - When the generation's lease ends, each of its sockets is sent `{"type":"ended"}` and
 *   closed, as the object does.
 * - Deliveries are asynchronous (microtasks), as a network's are; nothing is delivered
 *   after a socket closed.
 *
 * Does not: send `{"type":"lease"}` (the object tells a moved deadline; the client needs
 * only its epoch, which an `ended` announces first here), or simulate a network failure
 * (tests wrap the opener).
 */
import { formatCounter } from "../../protocol/counter.ts";
import type { GenerationRecord, LeaseEndReason } from "../../protocol/generations.ts";
import { generationToWire } from "../../protocol/generations.ts";
import { WATCH_PING_TEXT, WATCH_PONG_TEXT } from "../../protocol/watch.ts";
import type { WebSocketLike } from "../transport/websocket.ts";

/** What the sockets ask of the backend's generations. */
export interface LeaseChannelHost {
  /** Opening: a keepalive of `ttlMs`; the record, or throws the refusal. */
  open(generationId: string, ttlMs: number): GenerationRecord;
  /** A ping: extend the live lease to at least now + `ttlMs` (nothing when none is live). */
  ping(generationId: string, ttlMs: number): void;
}

type Listener = (event: never) => void;

const CONNECTING = 0;
const OPEN = 1;
const CLOSED = 3;

class MemoryLeaseSocket implements WebSocketLike {
  readyState = CONNECTING;
  private readonly listeners = new Map<string, Listener[]>();

  constructor(
    private readonly sockets: MemoryLeaseSockets,
    readonly generationId: string,
    private readonly ttlMs: number,
  ) {
    queueMicrotask(() => this.accept());
  }

  addEventListener(type: string, listener: Listener): void {
    this.listeners.set(type, [...(this.listeners.get(type) ?? []), listener]);
  }

  send(data: string): void {
    if (this.readyState !== OPEN) throw new Error("socket is not open");
    if (data !== WATCH_PING_TEXT) return; // the channel takes nothing else
    this.sockets.host.ping(this.generationId, this.ttlMs);
    this.deliver(WATCH_PONG_TEXT);
  }

  close(code = 1000, reason = ""): void {
    if (this.readyState === CLOSED) return;
    this.readyState = CLOSED;
    this.sockets.forget(this);
    queueMicrotask(() => this.emit("close", { code, reason }));
  }

  /** The lease ended: say so, then close. */
  ended(epoch: bigint, reason: LeaseEndReason): void {
    const text = JSON.stringify({ type: "ended", leaseEpoch: formatCounter(epoch), reason });
    queueMicrotask(() => {
      if (this.readyState !== OPEN) return;
      this.emit("message", { data: text });
      this.close(1000, "lease ended");
    });
  }

  private accept(): void {
    if (this.readyState !== CONNECTING) return;
    let record: GenerationRecord;
    try {
      record = this.sockets.host.open(this.generationId, this.ttlMs);
    } catch {
      this.readyState = CLOSED;
      this.emit("error", {});
      this.emit("close", { code: 1006, reason: "" });
      return;
    }
    this.readyState = OPEN;
    this.sockets.remember(this);
    this.emit("open", {});
    this.deliver(JSON.stringify({ type: "generation", generation: generationToWire(record) }));
  }

  private deliver(text: string): void {
    queueMicrotask(() => {
      if (this.readyState === OPEN) this.emit("message", { data: text });
    });
  }

  private emit(type: string, event: unknown): void {
    for (const listener of this.listeners.get(type) ?? []) (listener as (e: unknown) => void)(event);
  }
}

/** The open lease sockets of a backend, by generation. */
export class MemoryLeaseSockets {
  private readonly open = new Map<string, Set<MemoryLeaseSocket>>();

  constructor(readonly host: LeaseChannelHost) {}

  /** A socket to the lease channel of `generationId` with `ttlMs` (the channel's opener). */
  connect(generationId: string, ttlMs: number): WebSocketLike {
    return new MemoryLeaseSocket(this, generationId, ttlMs);
  }

  /** The lease of `generationId` ended: every channel of it hears why and closes. */
  ended(generationId: string, epoch: bigint, reason: LeaseEndReason): void {
    for (const socket of [...(this.open.get(generationId) ?? [])]) socket.ended(epoch, reason);
  }

  /** Close every socket (the backend closed). */
  closeAll(): void {
    for (const set of [...this.open.values()]) for (const socket of [...set]) socket.close(1001, "closed");
  }

  remember(socket: MemoryLeaseSocket): void {
    let set = this.open.get(socket.generationId);
    if (set === undefined) this.open.set(socket.generationId, (set = new Set()));
    set.add(socket);
  }

  forget(socket: MemoryLeaseSocket): void {
    const set = this.open.get(socket.generationId);
    set?.delete(socket);
    if (set?.size === 0) this.open.delete(socket.generationId);
  }
}
