/**
 * The lease channels of one generation (docs/protocol.md#sessions): hibernatable WebSockets
 * whose pings keep the generation's lease.
 *
 * Guarantees:
 * - A channel is accepted with its ttl in its versioned attachment (`{v: 1, unacked: 0,
 *   ttlMs}`), which the runtime keeps across hibernation, and is sent the generation record
 *   first (opening it is a keepalive the object has already committed).
 * - The exact ping `{"type":"ping"}` is answered by the runtime without waking the object
 *   (object-base.ts sets the auto-response); the runtime keeps the time of the last one per
 *   socket (measured locally: the server's receive time, to the millisecond, also in a fresh
 *   instance after hibernation and inside the alarm). A ping in another spelling wakes the
 *   object, is answered here, and its time is kept in the attachment. {@link deadlineMs} is
 *   the latest `ping time + ttl` over the open channels: the evidence the object reads when
 *   its alarm or a claim needs the deadline. No ping costs a request or a row.
 * - {@link announce} and {@link end} never throw: a socket that cannot be sent to is closed.
 * - {@link LEASE_CHANNEL_PARAMS} names the upgrade's internal query parameters once, for the
 *   router that writes them and the object that reads them ({@link leaseChannelParams}).
 *
 * Does not: decide whether the lease is live (core/generation-lease.ts) or persist anything
 * (the row keeps the channels' ttl, which bounds these pings should the channels vanish).
 */
import { formatCounter } from "../protocol/counter.ts";
import type { GenerationRecord, LeaseEndReason } from "../protocol/generations.ts";
import { generationToWire } from "../protocol/generations.ts";
import { type SubscriberAttachment, Subscribers } from "../durable/fan-out.ts";
import { closeQuietly, readClientMessage } from "../durable/websocket.ts";

/** Internal query parameters of the lease channel upgrade the router forwards to the object. */
export const LEASE_CHANNEL_PARAMS = { id: "id", ttlMs: "ttlMs" } as const;

/** The upgrade's parameters as the object reads them, or undefined when the request is no channel upgrade. */
export function leaseChannelParams(url: URL): { id: string; ttlMs: number } | undefined {
  const id = url.searchParams.get(LEASE_CHANNEL_PARAMS.id) ?? "";
  const ttlMs = Number(url.searchParams.get(LEASE_CHANNEL_PARAMS.ttlMs));
  return id === "" || !Number.isSafeInteger(ttlMs) || ttlMs <= 0 ? undefined : { id, ttlMs };
}

/** A channel's attachment: the fan-out's, plus the ttl its pings extend by and a non-auto ping's time. */
interface ChannelAttachment extends SubscriberAttachment {
  ttlMs: number;
  pingedAtMs?: number;
}

/** Close code after `{"type":"ended"}`: a normal close, the lease is over. */
export const LEASE_ENDED_CLOSE_CODE = 1000;

export class LeaseChannels extends Subscribers<null> {
  readonly tag = "lease";
  protected readonly resumeWith = "ttlMs";

  /** Accept `server` as a channel of `ttlMs`, sending it the record. Synchronous. */
  open(server: WebSocket, record: GenerationRecord, ttlMs: number, nowMs: number): void {
    this.accept(server, {
      control: [JSON.stringify({ type: "generation", generation: generationToWire(record) })],
      events: [],
    });
    const attachment: ChannelAttachment = { v: 1, unacked: 0, ttlMs, pingedAtMs: nowMs };
    server.serializeAttachment(attachment);
  }

  /** The latest `ping time + ttl` over the open channels (0 when none has one). */
  deadlineMs(): number {
    let deadline = 0;
    for (const ws of this.ctx.getWebSockets(this.tag)) deadline = Math.max(deadline, this.channelDeadlineMs(ws));
    return deadline;
  }

  /** The longest ttl of the open channels (0 when none): how far their pings reach past the next alarm. */
  maxTtlMs(): number {
    let ttlMs = 0;
    for (const ws of this.ctx.getWebSockets(this.tag)) {
      const attachment = ws.deserializeAttachment() as Partial<ChannelAttachment> | null;
      if (typeof attachment?.ttlMs === "number") ttlMs = Math.max(ttlMs, attachment.ttlMs);
    }
    return ttlMs;
  }

  /** True when at least one channel is open (its pings are their own evidence after a restart). */
  anyOpen(): boolean {
    return this.ctx.getWebSockets(this.tag).some((ws) => ws.readyState === WebSocket.OPEN);
  }

  /** One channel's `last ping + ttl` (the opening counts as a ping). */
  channelDeadlineMs(ws: WebSocket): number {
    const attachment = ws.deserializeAttachment() as Partial<ChannelAttachment> | null;
    const ttlMs = attachment?.ttlMs;
    if (typeof ttlMs !== "number") return 0;
    const autoMs = this.ctx.getWebSocketAutoResponseTimestamp(ws)?.getTime() ?? 0;
    return Math.max(autoMs, attachment?.pingedAtMs ?? 0) + ttlMs;
  }

  /** Tell every channel the deadline the object now promises. */
  announce(record: GenerationRecord): void {
    const text = JSON.stringify({
      type: "lease",
      leaseEpoch: formatCounter(record.leaseEpoch),
      leaseExpiresAtMs: record.leaseExpiresAtMs,
    });
    this.broadcast(text, false);
  }

  /** The lease ended: tell every channel why, then close it. */
  end(epoch: bigint, reason: LeaseEndReason): void {
    this.broadcast(JSON.stringify({ type: "ended", leaseEpoch: formatCounter(epoch), reason }), true);
  }

  /** A message the runtime did not answer: a ping in another spelling is a keepalive too. */
  override message(ws: WebSocket, data: string | ArrayBuffer, nowMs?: number): void {
    if (typeof data !== "string" || nowMs === undefined) return;
    // readClientMessage answers the ping; anything else on this channel is ignored.
    const isPing = (() => {
      try {
        return (JSON.parse(data) as { type?: unknown } | null)?.type === "ping";
      } catch {
        return false;
      }
    })();
    readClientMessage(ws, data);
    if (!isPing) return;
    const attachment = ws.deserializeAttachment() as ChannelAttachment | null;
    if (attachment !== null) ws.serializeAttachment({ ...attachment, pingedAtMs: nowMs });
  }

  protected unackedAfter(): number | undefined {
    return undefined;
  }

  private broadcast(text: string, close: boolean): void {
    let frames = 0;
    for (const ws of this.ctx.getWebSockets(this.tag)) {
      try {
        ws.send(text);
        frames++;
        if (close) closeQuietly(ws, LEASE_ENDED_CLOSE_CODE, "lease ended");
      } catch {
        closeQuietly(ws, LEASE_ENDED_CLOSE_CODE, "closed");
      }
    }
    this.onFramesSent(frames);
  }
}
