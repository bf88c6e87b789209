/**
 * The lease channel's client (docs/protocol.md#sessions): the client's one reconnecting
 * watch socket (transport/watch-socket.ts) on the route `generationLeaseChannel`, whose
 * keep-alive pings are the generation's keepalives.
 *
 * Guarantees:
 * - Every keepalive the server confirmed is yielded with the local time it was *sent*:
 *   `opened` (the `generation` message) carries the time the connection was asked for
 *   (before its ticket, when one is asked for first, so no later than the upgrade request),
 *   and each `pong` the time its ping was sent (pongs answer pings in order on one
 *   connection, so the n-th pong of a connection answers its n-th ping). Each item also
 *   carries the local time it arrived: whether it still counts is the caller's rule
 *   (client/lease-timing.ts: a pong that arrives after the deadline already held counts for
 *   nothing).
 * - A pong is stamped with the epoch its connection opened in; `lease` and `ended` are
 *   passed on as the server sent them. `ended` is the channel's last item: the server closes
 *   the connection after it, and the channel ends then (no reconnect, which would be a
 *   keepalive starting a new epoch). Pings go out every `pingIntervalMs` from the
 *   connection's open; a connection that answers nothing for an interval is replaced, and
 *   reconnects go through the client's one backoff (watch-socket.ts).
 * - A channel that never got established gives up after {@link LEASE_CHANNEL_ATTEMPTS}
 *   attempts (its iteration then fails), so a place where WebSockets cannot be upgraded
 *   costs a few attempts, not an attempt every few seconds for ever.
 *
 * Does not: decide whether the lease is live or lost (the session's lease does), or end the
 * lease when closed (closing a channel ends nothing on the server).
 */
import type { Clock } from "../../core/clock.ts";
import type { LeaseChannelMessage } from "../../protocol/generations.ts";
import type { pingMessageSchema } from "../../protocol/watch.ts";
import type { z } from "zod";
import { generationLeaseChannel } from "../../protocol/generation-routes.ts";
import { WatchSocket, type Receipt, type WatchAdapter } from "../transport/watch-socket.ts";
import type { SocketOpener } from "../transport/websocket.ts";
import type { LeaseChannel, LeaseChannelItem } from "./claims-backend.ts";

/** Attempts a channel makes before giving up when it never got established. */
export const LEASE_CHANNEL_ATTEMPTS = 3;

type Ping = z.output<typeof pingMessageSchema>;

export interface LeaseChannelConnection {
  /** The channel's WebSocket URL (`ws…/generations/{id}/lease?ttlMs=N`). */
  url: string;
  connect: SocketOpener;
  /** After a connection that was never established: reject with the refusal, if any. */
  probe: (signal: AbortSignal) => Promise<void>;
  clock: Clock;
  pingIntervalMs: number;
  reconnectMinMs: number;
  reconnectMaxMs: number;
  signal?: AbortSignal | undefined;
  /** Called once when the channel ends for any reason. */
  onEnd?: (() => void) | undefined;
}

/** What one connection of the channel has sent and learned: its opening's and pings' send times. */
class LeaseChannelAdapter implements WatchAdapter<LeaseChannelMessage, Ping, LeaseChannelItem> {
  private openedAtMs = 0;
  private pings: number[] = [];
  private epoch = 0n;

  constructor(
    private readonly target: string,
    private readonly clock: Clock,
    private readonly probeWith: (signal: AbortSignal) => Promise<void>,
  ) {}

  url(): string {
    // A new connection: what was pinged on the last one is answered there or never.
    this.openedAtMs = this.clock.nowMs();
    this.pings = [];
    return this.target;
  }

  pinged(): void {
    this.pings.push(this.clock.nowMs());
  }

  probe(signal: AbortSignal): Promise<void> {
    return this.probeWith(signal);
  }

  receive(message: LeaseChannelMessage): Receipt<LeaseChannelItem> {
    const receivedAtMs = this.clock.nowMs();
    const item = ((): LeaseChannelItem | undefined => {
      switch (message.type) {
        case "generation":
          this.epoch = message.generation.leaseEpoch;
          return { type: "opened", generation: message.generation, sentAtMs: this.openedAtMs, receivedAtMs };
        case "pong": {
          const sentAtMs = this.pings.shift();
          return sentAtMs === undefined ? undefined : { type: "pong", leaseEpoch: this.epoch, sentAtMs, receivedAtMs };
        }
        case "lease":
          return { ...message, receivedAtMs };
        case "ended":
          return { ...message, receivedAtMs };
      }
    })();
    // `ended`: the server closes the channel itself; the channel ends then, without reconnecting.
    const final = message.type === "ended";
    return { items: item === undefined ? [] : [item], event: false, established: true, final };
  }

  taken(): void {}

  ack(): undefined {
    return undefined;
  }
}

/**
 * Open the lease channel of one generation (see the module doc).
 * @example
 * const channel = openLeaseChannel({ url, connect, probe, clock, pingIntervalMs: 5_000, reconnectMinMs: 100, reconnectMaxMs: 5_000 });
 * for await (const item of channel) console.log(item.type);
 */
export function openLeaseChannel(c: LeaseChannelConnection): LeaseChannel {
  const adapter = new LeaseChannelAdapter(c.url, c.clock, c.probe);
  return new WatchSocket(adapter, {
    ...generationLeaseChannel.websocket,
    connect: c.connect,
    clock: c.clock,
    signal: c.signal,
    pingIntervalMs: c.pingIntervalMs,
    reconnectMinMs: c.reconnectMinMs,
    // A lease cannot wait long between attempts: at most one ping interval.
    reconnectMaxMs: Math.max(c.reconnectMinMs, Math.min(c.reconnectMaxMs, c.pingIntervalMs)),
    initialAttempts: LEASE_CHANNEL_ATTEMPTS,
    onEnd: c.onEnd,
  });
}
