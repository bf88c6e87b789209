/**
 * Coord watchers (docs/protocol.md#coord-watch): what a scope subscriber is sent and what its acks mean.
 * The fan-out itself (sockets, attachment, ack window, 4008, pings) is durable/fan-out.ts.
 *
 * Guarantees:
 * - Opening: `{"type":"ready","generation"}`, then every retained publish with a greater
 *   generation than `afterGeneration`, or — when history does not reach back — one event
 *   `{…, replay: true}` with the current generation, root and last key prefix. Live events
 *   follow, unfiltered (wantLock/unlocked carry the current generation), each exactly once.
 * - Acks are `{"type":"ack","count":N}`: N events processed *since the last ack* (docs/protocol.md#watch-flow-control).
 *   Each ack subtracts N from the socket's unacknowledged count, never below 0, so acks
 *   that overlap or overshoot can only shrink the window, never buy more than it holds.
 *
 * Does not: persist history (the store does) or authenticate (the router does).
 */
import { type CoordEvent, watchAckSchema } from "../protocol/coord.ts";
import { formatCounter } from "../protocol/counter.ts";
import type { ScopeState } from "../core/scope-state.ts";
import { Subscribers, type SubscriberAttachment } from "../durable/fan-out.ts";
import { eventText, type ScopeStore } from "./store.ts";

/** Tag of every watch socket. */
export const WATCH_TAG = "coord-watch";

export class ScopeWatchers extends Subscribers<ScopeStore> {
  readonly tag = WATCH_TAG;
  protected readonly resumeWith = "afterGeneration";

  /** Register `server`, send ready and the replay. Must not await (see module comment). */
  register(server: WebSocket, state: ScopeState, afterGeneration: bigint | undefined): void {
    const ready = JSON.stringify({ type: "ready", generation: formatCounter(state.generation) });
    this.accept(server, { control: [ready], events: this.store.replayMessages(state, afterGeneration) });
  }

  /** Send committed events to every subscriber, in commit order. Synchronous. */
  publish(events: readonly CoordEvent[]): void {
    this.send(events.map((e) => ({ text: eventText(e) })));
  }

  protected override unackedAfter(ack: Record<string, unknown>, state: SubscriberAttachment): number | undefined {
    const parsed = watchAckSchema.safeParse(ack);
    return parsed.success ? Math.max(0, state.unacked - parsed.data.count) : undefined;
  }
}
