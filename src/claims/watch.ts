/**
 * Claim watchers (docs/protocol.md#claim-watch): what a claim subscriber is sent and what its acks mean.
 * The fan-out itself (sockets, attachment, ack window, 4008, pings) is durable/fan-out.ts.
 *
 * Guarantees:
 * - Opening: without `afterVersion` a snapshot; with it every retained event after it, or a
 *   truncated snapshot when history no longer reaches it. Either way the socket is then at
 *   the claim's current version and is never sent an event at or below it again, so every
 *   event reaches it exactly once, in version order.
 * - Acks are `{"type":"ack","version":"N"}`: N is the last version processed (docs/protocol.md#watch-flow-control). The
 *   events still unacknowledged are those sent after N; an ack older than the retained
 *   history cannot be counted exactly and leaves the count as it was (never lower than true).
 *
 * Does not: persist events (the store does) or authenticate (the router does).
 */
import { claimToWire } from "../protocol/claims.ts";
import type { ClaimRecord } from "../protocol/claims.ts";
import { parseCounter } from "../protocol/counter.ts";
import type { ClaimEvent } from "../core/claim-machine.ts";
import { Subscribers, type SubscriberAttachment } from "../durable/fan-out.ts";
import { eventMessage } from "./store.ts";
import type { ClaimStore } from "./store.ts";

/** Tag of every watch socket (the object has no other kind). */
export const WATCH_TAG = "watch";

export class ClaimWatchers extends Subscribers<ClaimStore> {
  readonly tag = WATCH_TAG;
  protected readonly resumeWith = "afterVersion";

  /**
   * Register `server` and send its opening: a snapshot, a replay of events after
   * `afterVersion`, or a truncated snapshot when history does not reach that far back.
   * Must run synchronously with respect to mutations (no await inside).
   */
  register(server: WebSocket, current: ClaimRecord | undefined, afterVersion: bigint | undefined): void {
    // Everything up to the current version is delivered by the opening or never was an event.
    const lastSent = current?.version ?? 0n;
    const claim = current === undefined ? null : claimToWire(current);
    const history = afterVersion === undefined ? undefined : this.store.history(afterVersion, current);
    if (history?.kind === "events") return this.accept(server, { control: [], events: history.messages, lastSent });
    const snapshot = history === undefined ? { type: "snapshot", claim } : { type: "snapshot", claim, truncated: true };
    this.accept(server, { control: [JSON.stringify(snapshot)], events: [], lastSent });
  }

  /** Send committed events to every subscriber, in version order. Synchronous. */
  publish(events: readonly ClaimEvent[]): void {
    this.send(events.map((e) => ({ text: eventMessage(e), seq: e.claim.version })));
  }

  protected override unackedAfter(ack: Record<string, unknown>, state: SubscriberAttachment): number | undefined {
    const acked = typeof ack["version"] === "string" ? parseCounter(ack["version"]) : undefined;
    if (acked === undefined) return undefined;
    const lastSent = BigInt(state.lastSent ?? "0");
    if (acked >= lastSent) return 0;
    if (acked < this.store.prunedThrough()) return state.unacked;
    return Math.min(state.unacked, this.store.countEvents(acked, lastSent));
  }
}
