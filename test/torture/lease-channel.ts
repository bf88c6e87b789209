/**
 * A torture client's lease channel (docs/protocol.md#sessions): a plain WebSocket (`ws`) to
 * `GET …/generations/{id}/lease?ttlMs=N`, so the history holds exactly what was sent and
 * received (history.ts `channel` entries).
 *
 * Guarantees:
 * - Every frame is recorded: the opening (with its ttl), each ping as sent
 *   ({@link WATCH_PING_TEXT}, the spelling the runtime answers without waking the object),
 *   each message as received, and the close as seen.
 * - {@link LeaseChannel.heldUntilMs} is the deadline the client may count on, by the
 *   protocol's rule: the record's and `lease` messages' deadlines, and a ping's send time +
 *   ttl once its pong arrives before the deadline already held (pongs come in ping order).
 *   `ended`, or the channel closing, ends it.
 *
 * Does not: retry or reopen (the session decides, sessions.ts).
 */
import WebSocket from "ws";
import { generationLeaseChannel } from "../../src/protocol/generation-routes.ts";
import { fillPath } from "../../src/protocol/route.ts";
import { WATCH_PING_TEXT } from "../../src/protocol/watch.ts";
import type { HistoryWriter } from "./history.ts";
import { TOKEN } from "./wire.ts";

/** The lease a channel holds as far as its client knows. */
export interface ChannelLease {
  epoch: string;
  deadlineMs: number;
}

export class LeaseChannel {
  private readonly socket: WebSocket;
  private readonly conn: number;
  private readonly pings: number[] = [];
  private lease: ChannelLease | undefined;
  private closedAtMs: number | undefined;
  /** Resolves with the opening's record (undefined: the channel closed first, or `timeoutMs` passed). */
  readonly opened: Promise<ChannelLease | undefined>;

  constructor(
    private readonly history: HistoryWriter,
    baseUrl: string,
    namespace: string,
    private readonly generation: string,
    private readonly ttlMs: number,
    timeoutMs: number,
  ) {
    this.conn = history.newId();
    const path = fillPath(generationLeaseChannel.path, { ns: namespace, id: generation });
    this.write("open", { ttlMs });
    this.socket = new WebSocket(`${baseUrl.replace(/^http/, "ws")}${path}?ttlMs=${ttlMs}`, {
      headers: { authorization: `Bearer ${TOKEN}` },
      handshakeTimeout: timeoutMs,
    });
    let resolveOpened: (lease: ChannelLease | undefined) => void = () => {};
    this.opened = new Promise((resolve) => (resolveOpened = resolve));
    const giveUp = setTimeout(() => resolveOpened(undefined), timeoutMs);
    this.socket.on("message", (data: Buffer) => {
      let msg: Record<string, unknown>;
      try {
        msg = JSON.parse(data.toString()) as Record<string, unknown>;
      } catch {
        return;
      }
      const atMs = Date.now();
      this.write("message", { msg }, atMs);
      this.receive(msg, atMs);
      if (msg["type"] === "generation") {
        clearTimeout(giveUp);
        resolveOpened(this.lease);
      }
    });
    this.socket.on("error", () => this.socket.terminate());
    this.socket.on("close", () => {
      clearTimeout(giveUp);
      this.closedAtMs = Date.now();
      this.lease = undefined;
      this.write("close", {}, this.closedAtMs);
      resolveOpened(undefined);
    });
  }

  /** The lease the client may count on now (undefined: none, or the channel is gone). */
  heldUntilMs(): ChannelLease | undefined {
    return this.lease !== undefined && Date.now() <= this.lease.deadlineMs ? this.lease : undefined;
  }

  /** True once the channel closed (or failed). */
  get closed(): boolean {
    return this.closedAtMs !== undefined;
  }

  /** Send one ping (a keepalive); false when the channel is not open. */
  ping(): boolean {
    if (this.socket.readyState !== WebSocket.OPEN) return false;
    const atMs = Date.now();
    this.pings.push(atMs);
    this.write("ping", {}, atMs);
    this.socket.send(WATCH_PING_TEXT);
    return true;
  }

  /** Close the channel (closing ends nothing: the lease runs to its deadline). */
  close(): void {
    if (this.socket.readyState === WebSocket.OPEN) this.socket.close(1000, "torture: done");
    else if (this.socket.readyState === WebSocket.CONNECTING) this.socket.terminate();
  }

  private receive(msg: Record<string, unknown>, atMs: number): void {
    const type = msg["type"];
    if (type === "generation") {
      const g = msg["generation"] as { leaseEpoch: string; leaseExpiresAtMs: number };
      this.lease = g.leaseExpiresAtMs > 0 ? { epoch: g.leaseEpoch, deadlineMs: g.leaseExpiresAtMs } : undefined;
    } else if (type === "lease" && this.lease !== undefined) {
      this.lease.deadlineMs = Math.max(this.lease.deadlineMs, Number(msg["leaseExpiresAtMs"]));
    } else if (type === "ended") {
      this.lease = undefined;
    } else if (type === "pong") {
      const sentMs = this.pings.shift();
      // Counted only when it arrives before the deadline already held (docs/protocol.md#sessions).
      if (sentMs !== undefined && this.lease !== undefined && atMs < this.lease.deadlineMs) {
        this.lease.deadlineMs = Math.max(this.lease.deadlineMs, sentMs + this.ttlMs);
      }
    }
  }

  private write(
    kind: "open" | "ping" | "message" | "close",
    extra: { ttlMs?: number; msg?: unknown },
    atMs = Date.now(),
  ): void {
    this.history.write({ t: "channel", generation: this.generation, conn: this.conn, atMs, kind, ...extra });
  }
}
