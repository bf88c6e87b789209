/**
 * Coord watchers over hibernatable WebSockets (SPEC §4 "Watch").
 *
 * Guarantees:
 * - Registration, `{"type":"ready","generation"}` and the replay are sent in one synchronous
 *   stretch of the object's single thread, and mutations publish synchronously right after
 *   their transaction: no event can fall between "registered" and "replayed", so each
 *   subscriber sees the replay first and then every live event once, in order.
 * - Replay: every retained publish with a greater generation, or — when history does not
 *   reach back — one event `{…, replay: true}` with the current generation, root and last
 *   key prefix. Live events are not filtered by generation (wantLock/unlocked carry the
 *   current one).
 * - Lag: workerd exposes no `bufferedAmount` or send-completion signal on server-side
 *   sockets, so the object cannot observe a slow reader's queue. A subscriber acknowledges
 *   with `{"type":"ack","count":N}` (N = event messages processed since it connected,
 *   replay included); a socket with more than {@link WATCH_MAX_UNACKED_EVENTS} (1,024) unacknowledged
 *   events, or whose `send()` throws, is closed with 4008 *instead of* being sent the event.
 *   It resumes with `afterGeneration`; nothing is skipped silently.
 * - `{"type":"ping"}` (exactly) is answered `{"type":"pong"}` by the runtime without waking
 *   the object (auto-response); other spellings are answered by the object.
 *
 * Does not: authenticate (the router does) or persist history (the store does).
 */
import { type CoordEvent, eventToWire } from "../protocol/coord.ts";
import { LAGGING_CLOSE_CODE, WATCH_MAX_UNACKED_EVENTS } from "../protocol/watch.ts";
import { closeQuietly, readClientMessage } from "../durable/websocket.ts";
import { formatCounter } from "../protocol/counter.ts";
import type { ScopeState } from "../core/scope-machine.ts";
import type { ScopeStore } from "./store.ts";

/** Tag of every watch socket. */
export const WATCH_TAG = "coord-watch";

/** Per-socket state that survives hibernation. `v` versions the shape. */
interface WatchAttachment {
  v: 1;
  /** Event messages sent on this socket (replay included). */
  sent: number;
  /** Highest cumulative count the subscriber acknowledged. */
  acked: number;
}

function readAttachment(ws: WebSocket): WatchAttachment {
  const a = ws.deserializeAttachment() as Partial<WatchAttachment> | null;
  return a !== null && a.v === 1 && typeof a.sent === "number" && typeof a.acked === "number"
    ? (a as WatchAttachment)
    : { v: 1, sent: 0, acked: 0 };
}

export class ScopeWatchers {
  /** Unacknowledged events allowed per subscriber before 4008 (replaceable in tests). */
  maxUnacked = WATCH_MAX_UNACKED_EVENTS;

  constructor(
    private readonly ctx: DurableObjectState,
    private readonly store: ScopeStore,
  ) {}

  count(): number {
    return this.ctx.getWebSockets(WATCH_TAG).length;
  }

  /** Register `server`, send ready and the replay. Must not await (see module comment). */
  register(server: WebSocket, state: ScopeState, afterGeneration: bigint | undefined): void {
    this.ctx.acceptWebSocket(server, [WATCH_TAG]);
    server.send(JSON.stringify({ type: "ready", generation: formatCounter(state.generation) }));
    const plan = this.store.replayPlan(state, afterGeneration);
    let sent = 0;
    if (plan.kind === "history") {
      for (const message of plan.messages) server.send(message);
      sent = plan.messages.length;
    } else if (plan.kind === "summary") {
      server.send(JSON.stringify(plan.event));
      sent = 1;
    }
    server.serializeAttachment({ v: 1, sent, acked: 0 } satisfies WatchAttachment);
  }

  /** Send committed events to every subscriber, in order. Synchronous. */
  publish(events: readonly CoordEvent[]): void {
    if (events.length === 0) return;
    const sockets = this.ctx.getWebSockets(WATCH_TAG);
    if (sockets.length === 0) return;
    const texts = events.map((e) => JSON.stringify(eventToWire(e)));
    for (const ws of sockets) {
      if (ws.readyState !== WebSocket.OPEN) continue;
      const state = readAttachment(ws);
      let sent = state.sent;
      let lagging = false;
      for (const text of texts) {
        if (sent - state.acked >= this.maxUnacked) {
          lagging = true;
          break;
        }
        try {
          ws.send(text);
        } catch {
          lagging = true;
          break;
        }
        sent++;
      }
      if (lagging) {
        closeQuietly(ws, LAGGING_CLOSE_CODE, "subscriber lagging; resume with afterGeneration");
        continue;
      }
      ws.serializeAttachment({ v: 1, sent, acked: state.acked } satisfies WatchAttachment);
    }
  }

  /** Client messages: pings and acks; anything else is ignored. */
  message(ws: WebSocket, data: string | ArrayBuffer): void {
    const msg = readClientMessage(ws, data) as { type?: unknown; count?: unknown } | undefined;
    if (msg === undefined) return;
    if (msg.type !== "ack" || typeof msg.count !== "number" || !Number.isSafeInteger(msg.count)) return;
    const state = readAttachment(ws);
    // Acks only move forward and never past what was sent.
    const acked = Math.max(state.acked, Math.min(msg.count, state.sent));
    if (acked !== state.acked) ws.serializeAttachment({ ...state, acked } satisfies WatchAttachment);
  }
}
