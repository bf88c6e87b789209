/**
 * One claim of the in-memory backend: its record, its operation-id log, its event
 * history and its watchers — the in-process twin of a claim's Durable Object.
 *
 * Guarantees:
 * - Every change goes through {@link decideClaim} (the server's machine), is stored, then
 *   published to watchers in version order and appended to a history of the last
 *   {@link RETAINED_EVENTS} events, so a watcher resuming with `afterVersion` gets exactly
 *   the events it missed, or a `truncated` snapshot when the history no longer reaches.
 * - Operation ids follow `core/claim-operations.ts`: the first response (status and body) is stored
 *   and replayed for the same request; retention is the server's (≥ 1,000 ops and ≥ 1 h).
 *
 * Does not: read the clock or schedule expiry (the backend passes `nowMs` and drives the
 * expiry timer), or bound a watcher's buffer (memory watchers are never closed as slow).
 */
import type { ClaimRecord } from "../../protocol/claims.ts";
import { decideClaim, type ClaimCommand, type ClaimEvent } from "../../core/claim-machine.ts";
import type { LeaseViews } from "../../core/claim-leases.ts";
import { isPrunable, isRememberedStatus, replay, type OperationRecord } from "../../core/claim-operations.ts";
import { planClaimReplay, RETAINED_EVENTS } from "../../core/claim-replay.ts";
import { claimResultToResponse } from "../../core/claim-response.ts";
import type { WireResponse } from "../../protocol/wire-response.ts";
import type { ClaimWatchItem } from "./claims-backend.ts";
import type { WatchQueue } from "../transport/watch-queue.ts";

/** A watcher's copy of an event (a consumer mutating it must not touch the backend's state). */
function watchItem(event: ClaimEvent): ClaimWatchItem {
  const { reason, claim, timeMs, note } = event;
  return { type: "event", reason, claim: { ...claim }, timeMs, ...(note === undefined ? {} : { note }) };
}

export class MemoryClaim {
  record: ClaimRecord | undefined;
  private readonly operations = new Map<string, OperationRecord>();
  private readonly history: ClaimEvent[] = [];
  /** Events with a version ≤ this may have been dropped from the history. */
  private historyFloor = 0n;
  private readonly watchers = new Set<WatchQueue<ClaimWatchItem>>();

  constructor(readonly name: string) {}

  /**
   * Run one command. With an operation id, a known id replays (or conflicts) without
   * touching the record; otherwise the response is remembered when the protocol says so.
   */
  run(
    command: ClaimCommand,
    nowMs: number,
    op?: { id: string; fingerprint: string },
    views?: LeaseViews,
  ): WireResponse {
    if (op !== undefined) {
      const known = this.operations.get(op.id);
      if (known !== undefined) return replay(known, op.fingerprint);
    }
    const step = decideClaim(this.name, this.record, command, nowMs, views);
    if (step.changed) this.record = step.next;
    for (const event of step.events) this.publish(event);
    const response = claimResultToResponse(step.result);
    if (op !== undefined && isRememberedStatus(response.status)) this.remember(op.id, op.fingerprint, response, nowMs);
    return response;
  }

  /** True when `operationId` is remembered (its retry replays without asking anything). */
  knows(operationId: string): boolean {
    return this.operations.has(operationId);
  }

  private remember(operationId: string, fingerprint: string, response: WireResponse, nowMs: number): void {
    this.operations.set(operationId, { operationId, fingerprint, response, atMs: nowMs });
    // Map iteration is insertion order: the first entry is the oldest.
    for (const [id, oldest] of this.operations) {
      if (!isPrunable(oldest.atMs, this.operations.size - 1, nowMs)) break;
      this.operations.delete(id);
    }
  }

  private publish(event: ClaimEvent): void {
    this.history.push(event);
    if (this.history.length > RETAINED_EVENTS) {
      const dropped = this.history.shift();
      if (dropped !== undefined) this.historyFloor = dropped.claim.version;
    }
    // Each watcher gets its own copy: a consumer mutating an item must not touch the backend's state.
    for (const w of this.watchers) w.push(watchItem(event));
  }

  /**
   * Start a watcher: a snapshot (no `afterVersion`), the retained events after
   * `afterVersion`, or a truncated snapshot when the history does not reach back that far
   * (or `afterVersion` is ahead of this claim, e.g. a backend that was reset).
   */
  subscribe(queue: WatchQueue<ClaimWatchItem>, afterVersion: bigint | undefined): void {
    const current = this.record?.version ?? 0n;
    const plan = planClaimReplay(afterVersion, current, this.historyFloor);
    if (plan.kind !== "events") {
      queue.push({ type: "snapshot", claim: this.copy(), truncated: plan.kind === "truncated" });
    } else {
      for (const e of this.history) {
        if (e.claim.version > plan.afterVersion) queue.push(watchItem(e));
      }
    }
    this.watchers.add(queue);
  }

  private copy(): ClaimRecord | null {
    return this.record === undefined ? null : { ...this.record };
  }

  unsubscribe(queue: WatchQueue<ClaimWatchItem>): void {
    this.watchers.delete(queue);
  }

  /** End every watcher (backend closed). */
  endWatchers(): void {
    for (const w of [...this.watchers]) w.close();
    this.watchers.clear();
  }
}
