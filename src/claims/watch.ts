/**
 * Claim watchers over hibernatable WebSockets (SPEC §3 "Watch").
 *
 * Guarantees:
 * - A new subscriber is registered, and its snapshot or replay sent, in one synchronous
 *   stretch of the object's single thread; mutations publish synchronously right after
 *   their transaction. No event can therefore commit between "registered" and "replayed":
 *   every subscriber sees each event exactly once, in version order, after its start point.
 * - Each socket remembers (in a versioned attachment that survives hibernation) the version
 *   of the last event it was sent; an event at or below it is never sent again.
 * - Lag: workerd exposes no `bufferedAmount` or send-completion signal for server-side
 *   sockets, so the object cannot see a slow reader's queue. Instead a subscriber
 *   acknowledges what it processed with `{"type":"ack","version":"N"}`; a socket with more
 *   than {@link WATCH_MAX_UNACKED_EVENTS} unacknowledged events, or whose `send()` fails, is
 *   closed with 4008 *instead of* being sent the event. It resumes with `afterVersion` and
 *   loses nothing: events are never skipped silently.
 * - `{"type":"ping"}` (exactly) is answered `{"type":"pong"}` by the runtime without waking
 *   the object; other spellings of a ping are answered by the object.
 *
 * Does not: authenticate (the router does) or persist events (the store does).
 */
import { claimToWire } from "../protocol/claims.ts";
import type { ClaimRecord } from "../protocol/claims.ts";
import { parseCounter } from "../protocol/counter.ts";
import { LAGGING_CLOSE_CODE, WATCH_MAX_UNACKED_EVENTS } from "../protocol/watch.ts";
import { closeQuietly, readClientMessage } from "../durable/websocket.ts";
import type { ClaimEvent } from "../core/claim-machine.ts";
import { eventMessage } from "./store.ts";
import type { ClaimStore } from "./store.ts";

/** Tag of every watch socket (the object has no other kind). */
export const WATCH_TAG = "watch";

/** Per-socket state that survives hibernation. `v` versions the shape. */
export interface WatchAttachment {
  v: 1;
  /** Version (decimal) of the last event or snapshot sent. */
  lastSent: string;
  /** Events sent and not yet acknowledged. */
  unacked: number;
}

function readAttachment(ws: WebSocket): WatchAttachment | undefined {
  const a = ws.deserializeAttachment() as Partial<WatchAttachment> | null;
  return a !== null && a.v === 1 && typeof a.lastSent === "string" ? (a as WatchAttachment) : undefined;
}

export class ClaimWatchers {
  constructor(
    private readonly ctx: DurableObjectState,
    private readonly store: ClaimStore,
  ) {}

  /** Number of registered subscribers. */
  count(): number {
    return this.ctx.getWebSockets(WATCH_TAG).length;
  }

  /**
   * Register `server` and send its opening messages: a snapshot, a replay of events after
   * `afterVersion`, or a truncated snapshot when history does not reach that far back.
   * Must run synchronously with respect to mutations (no await inside).
   */
  register(server: WebSocket, current: ClaimRecord | undefined, afterVersion: bigint | undefined): void {
    this.ctx.acceptWebSocket(server, [WATCH_TAG]);
    const snapshot = (truncated: boolean): void => {
      const claim = current === undefined ? null : claimToWire(current);
      server.send(
        JSON.stringify(truncated ? { type: "snapshot", claim, truncated: true } : { type: "snapshot", claim }),
      );
      server.serializeAttachment({ v: 1, lastSent: (current?.version ?? 0n).toString(), unacked: 0 });
    };
    if (afterVersion === undefined) return snapshot(false);
    const history = this.store.history(afterVersion, current);
    if (history.kind === "truncated") return snapshot(true);
    for (const message of history.messages) server.send(message);
    // Everything up to the current version has now been delivered or never was an event.
    const lastSent = (current?.version ?? 0n).toString();
    server.serializeAttachment({ v: 1, lastSent, unacked: history.messages.length } satisfies WatchAttachment);
  }

  /** Send committed events to every subscriber, in order. Synchronous. */
  publish(events: readonly ClaimEvent[]): void {
    if (events.length === 0) return;
    const sockets = this.ctx.getWebSockets(WATCH_TAG);
    if (sockets.length === 0) return;
    const messages = events.map((e) => ({ version: e.claim.version, text: eventMessage(e) }));
    for (const ws of sockets) {
      if (ws.readyState !== WebSocket.OPEN) continue;
      const state = readAttachment(ws) ?? { v: 1, lastSent: "0", unacked: 0 };
      let lastSent = BigInt(state.lastSent);
      let unacked = state.unacked;
      let lagging = false;
      for (const m of messages) {
        if (m.version <= lastSent) continue;
        if (unacked >= WATCH_MAX_UNACKED_EVENTS) {
          lagging = true;
          break;
        }
        try {
          ws.send(m.text);
        } catch {
          lagging = true;
          break;
        }
        lastSent = m.version;
        unacked++;
      }
      if (lagging) {
        closeQuietly(ws, LAGGING_CLOSE_CODE, "subscriber lagging; resume with afterVersion");
        continue;
      }
      ws.serializeAttachment({ v: 1, lastSent: lastSent.toString(), unacked } satisfies WatchAttachment);
    }
  }

  /** Handle a client message: acks and pings; anything else is ignored. */
  message(ws: WebSocket, data: string | ArrayBuffer): void {
    const msg = readClientMessage(ws, data) as { type?: unknown; version?: unknown } | undefined;
    if (msg === undefined) return;
    if (msg.type !== "ack" || typeof msg.version !== "string") return;
    const acked = parseCounter(msg.version);
    const state = readAttachment(ws);
    if (acked === undefined || state === undefined) return;
    const lastSent = BigInt(state.lastSent);
    let unacked = state.unacked;
    if (acked >= lastSent) unacked = 0;
    else if (acked >= this.store.prunedThrough()) unacked = Math.min(unacked, this.store.countEvents(acked, lastSent));
    // An ack older than retained history cannot be counted exactly; keep the conservative count.
    ws.serializeAttachment({ ...state, unacked } satisfies WatchAttachment);
  }
}
