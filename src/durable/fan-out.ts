/**
 * Watch subscribers of one Durable Object over hibernatable WebSockets: the one fan-out,
 * ack window and lag rule of both watches (docs/protocol.md#claims, #coord-watch, #watch-flow-control).
 *
 * Guarantees:
 * - A subscriber is accepted and sent its opening messages (snapshot or ready, then any
 *   replay) in one synchronous stretch; the object publishes synchronously right after each
 *   transaction, so nothing can commit between "accepted" and "replayed".
 * - Per-socket state lives in a versioned attachment, `{v: 1, unacked, lastSent?}`, which the
 *   runtime keeps across hibernation: events sent and not yet acknowledged, and (for
 *   streams whose events carry a unique increasing `seq`, the claim's version) the last one
 *   sent; an event at or below `lastSent` is never sent again.
 * - Lag: workerd gives server sockets no `bufferedAmount` or send-completion signal, so
 *   subscribers acknowledge what they processed (docs/protocol.md#watch-flow-control). A
 *   socket with `maxUnacked` unacknowledged events (the protocol's window,
 *   `WATCH_MAX_UNACKED_EVENTS`), or whose `send()` throws, is closed with
 *   {@link LAGGING_CLOSE_CODE} *instead of* being sent the event: it resumes from what it
 *   processed and nothing is skipped silently.
 * - Pings: `{"type":"ping"}` (exactly) is answered by the runtime's auto-response without
 *   waking the object (set up by the object base); other spellings are answered here.
 *
 * Does not: decide what an ack means (each watch reads its own form in {@link unackedAfter}),
 * build messages, or authenticate (the router does).
 */
import { formatCounter } from "../protocol/counter.ts";
import { LAGGING_CLOSE_CODE } from "../protocol/watch.ts";
import type { ObjectSettings } from "./object-settings.ts";
import { closeQuietly, readClientMessage } from "./websocket.ts";

/** Per-socket state that survives hibernation. `v` versions the shape. */
export interface SubscriberAttachment {
  v: 1;
  /** Events sent and not yet acknowledged. */
  unacked: number;
  /** Decimal `seq` of the last event sent, for streams whose events carry one. */
  lastSent?: string;
}

/** One event as it leaves: its wire text and, where the stream has one, its unique position. */
export interface OutgoingEvent {
  text: string;
  seq?: bigint;
}

/** What a new subscriber is sent before live events. */
export interface Opening {
  /** Messages that are not events (snapshot, ready): sent first, never counted. */
  control: readonly string[];
  /** Replayed events: sent next, counted as unacknowledged. */
  events: readonly string[];
  /** The position the subscriber is at once the opening is sent (streams with `seq`). */
  lastSent?: bigint;
}

function readAttachment(ws: WebSocket): SubscriberAttachment {
  const a = ws.deserializeAttachment() as Partial<SubscriberAttachment> | null;
  if (a === null || a.v !== 1 || typeof a.unacked !== "number") return { v: 1, unacked: 0 };
  return typeof a.lastSent === "string"
    ? { v: 1, unacked: a.unacked, lastSent: a.lastSent }
    : { v: 1, unacked: a.unacked };
}

/** The subscribers of one watch; `Store` is where its opening and its acks are read from. */
export abstract class Subscribers<Store> {
  /** Called once per subscriber closed with 4008 (the object counts it). */
  onLaggingClose: () => void = () => undefined;
  /** Called with the frames each publish or opening sent (the object's meter). */
  onFramesSent: (frames: number) => void = () => undefined;
  /** The tag of every socket of this watch. */
  abstract readonly tag: string;
  /** The query parameter a subscriber closed with 4008 resumes with (said in the reason). */
  protected abstract readonly resumeWith: string;

  constructor(
    protected readonly ctx: DurableObjectState,
    protected readonly store: Store,
    /** Where the ack window is read, at each publish (object-settings.ts). */
    private readonly settings: Pick<ObjectSettings, "maxUnacked">,
  ) {}

  /** Number of registered subscribers. */
  count(): number {
    return this.ctx.getWebSockets(this.tag).length;
  }

  /** Accept `server` and send its opening. Must run synchronously with respect to mutations. */
  protected accept(server: WebSocket, opening: Opening): void {
    this.ctx.acceptWebSocket(server, [this.tag]);
    for (const text of opening.control) server.send(text);
    for (const text of opening.events) server.send(text);
    this.onFramesSent(opening.control.length + opening.events.length);
    const attachment: SubscriberAttachment = { v: 1, unacked: opening.events.length };
    if (opening.lastSent !== undefined) attachment.lastSent = formatCounter(opening.lastSent);
    server.serializeAttachment(attachment);
  }

  /** Send committed events to every subscriber, in order, or close it with 4008. Synchronous. */
  protected send(events: readonly OutgoingEvent[]): void {
    if (events.length === 0) return;
    let frames = 0;
    for (const ws of this.ctx.getWebSockets(this.tag)) {
      if (ws.readyState !== WebSocket.OPEN) continue;
      const state = readAttachment(ws);
      let lastSent = state.lastSent === undefined ? undefined : BigInt(state.lastSent);
      let unacked = state.unacked;
      let lagging = false;
      for (const event of events) {
        if (event.seq !== undefined && lastSent !== undefined && event.seq <= lastSent) continue;
        if (unacked >= this.settings.maxUnacked || !trySend(ws, event.text)) {
          lagging = true;
          break;
        }
        unacked++;
        frames++;
        if (event.seq !== undefined) lastSent = event.seq;
      }
      if (lagging) {
        closeQuietly(ws, LAGGING_CLOSE_CODE, `subscriber lagging; resume with ${this.resumeWith}`);
        this.onLaggingClose();
        continue;
      }
      const next: SubscriberAttachment = { v: 1, unacked };
      if (lastSent !== undefined) next.lastSent = formatCounter(lastSent);
      ws.serializeAttachment(next);
    }
    this.onFramesSent(frames);
  }

  /** A client message: pings are answered, acks settle the window, anything else is ignored. */
  message(ws: WebSocket, data: string | ArrayBuffer): void {
    const message = readClientMessage(ws, data);
    if (message?.["type"] !== "ack") return;
    const state = readAttachment(ws);
    const unacked = this.unackedAfter(message, state);
    if (unacked !== undefined && unacked !== state.unacked) ws.serializeAttachment({ ...state, unacked });
  }

  /** The unacknowledged count after `ack`, or undefined for an ack this watch does not accept. */
  protected abstract unackedAfter(ack: Record<string, unknown>, state: SubscriberAttachment): number | undefined;
}

/** Send, reporting failure instead of throwing (a failed send is lag: the socket is closed). */
function trySend(ws: WebSocket, text: string): boolean {
  try {
    ws.send(text);
    return true;
  } catch {
    return false;
  }
}
