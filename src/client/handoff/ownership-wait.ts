/**
 * Waiting for a claim of a generation session (`ClaimHandle.waitForOwnership`): acquire
 * attempts woken by the claim's watch, with a poll as a safety net, and adoption straight
 * from a commit event that names this generation.
 *
 * Guarantees:
 * - With a live watch, every change that can make the claim ours (released, expired,
 *   evicted, committed to this generation) wakes the wait at once; the poll then runs only
 *   every `watchedAcquireIntervalMs`, so a standby waiting on many claims costs requests in
 *   proportion to their changes, not to the time it waits. Without one it polls every
 *   `acquireIntervalMs`.
 * - A commit event that gives the claim to this generation is adopted without another round
 *   trip, even while an acquire attempt is in flight: an unbound claim while its deadline
 *   (counted from the event's arrival) leaves room before the loss margin, a bound one while
 *   the epoch it was bound to is this session's live epoch.
 * - `claim_held`, `not_owner`, `no_lease` (the session's epoch ended under the acquire) and
 *   transient failures are waited through; anything else ends the wait with its error, as
 *   does the caller's signal or the session closing.
 *
 * Does not: hold the lease (session-claim.ts does), or close the watch on the ownership's
 * path (wake-watch.ts closes it on the next tick).
 */
import type { ClaimRecord } from "../../protocol/claims.ts";
import { ShiftlockError, hasCode } from "../../protocol/errors.ts";
import type { ClaimWatchItem } from "../claims/claims-backend.ts";
import { anySignal, isRetryable } from "../transport/retry-policy.ts";
import type { Lease } from "./lease.ts";
import type { ClaimAcquireOptions, ClaimWaitOptions, SessionContext } from "./session-claim.ts";
import { startWakeWatch } from "./wake-watch.ts";

/** What the wait needs of the claim it waits for. */
export interface WaitingClaim {
  readonly name: string;
  readonly lease: Lease | undefined;
  tryAcquire(opts: ClaimAcquireOptions): Promise<Lease>;
  adopt(record: ClaimRecord, deadlineMs: number): Lease;
}

/** Acquire `claim`, waiting as the module doc says. */
export async function waitForOwnership(
  claim: WaitingClaim,
  session: SessionContext,
  opts: ClaimWaitOptions,
): Promise<Lease> {
  const { cfg } = session;
  const isMine = (record: ClaimRecord | null): boolean =>
    record !== null && record.ownerGeneration === cfg.generationId && record.phase === "owned";
  const stopped = (): Error =>
    opts.signal?.aborted === true
      ? (opts.signal.reason as Error)
      : new ShiftlockError("invalid_state", "generation session is closed", { reason: "closed" });
  const stop = anySignal(opts.signal, session.closedSignal);
  let wake: (() => void) | undefined;
  let committed: { record: ClaimRecord; deadlineMs: number } | undefined;
  const onItem = (item: ClaimWatchItem): void => {
    if (item.type === "event" && item.reason === "transfer_committed" && isMine(item.claim)) {
      // The commit event itself proves ownership: adopt without another round trip. The
      // remaining ttl is counted from the event's arrival; the first renew, within
      // ADOPTED_FIRST_RENEW_MAX_MS, re-bases the deadline on a measured round trip.
      committed = { record: item.claim, deadlineMs: cfg.clock.nowMs() + (item.claim.expiresAtMs - item.timeMs) };
    }
    wake?.();
  };
  const watch =
    opts.watch === false ? undefined : startWakeWatch(cfg.backend, cfg.clock, claim.name, isMine, onItem, stop);
  // With a live watch every change that can make the claim ours wakes the loop, so the
  // poll is only a safety net and runs rarely: a standby waiting on many claims costs
  // requests in proportion to their changes, not to the time it waits.
  const pollMs = (): number => (watch?.live() === true ? cfg.watchedAcquireIntervalMs : cfg.acquireIntervalMs);
  try {
    for (;;) {
      const held = claim.lease;
      if (held !== undefined) return held;
      if (committed !== undefined) {
        const { record, deadlineMs } = committed;
        committed = undefined;
        if (record.bound) {
          // Bound at the commit to an epoch of this session's lease: adopt while that epoch is live.
          if (session.lease?.current?.epoch === record.leaseEpoch) return claim.adopt(record, deadlineMs);
        } else if (deadlineMs - cfg.safetyMarginMs > cfg.clock.nowMs()) return claim.adopt(record, deadlineMs);
      }
      // A commit event that arrives while this poll is in flight is adopted at once: under
      // load the poll's answer can take far longer than the event. The poll keeps its
      // interest, so if it succeeds later it returns this same lease (acquireOnce), never
      // a compensating release.
      const gotEvent = new Promise<"event">((resolve) => (wake = () => resolve("event")));
      const attempt = claim.tryAcquire({ signal: stop }).then(
        (lease) => ({ lease }),
        (err: unknown) => ({ err }),
      );
      let answer = await Promise.race([attempt, gotEvent]);
      if (answer === "event") {
        if (committed !== undefined) continue;
        answer = await attempt;
      }
      wake = undefined;
      if ("lease" in answer) return answer.lease;
      if (stop.aborted) throw stopped();
      const err = answer.err;
      // `no_lease`: the session's epoch ended under the acquire; the next one waits for a fresh epoch.
      const again = ["claim_held", "not_owner", "no_lease"] as const;
      if (!again.some((code) => hasCode(err, code)) && !isRetryable(err)) throw err;
      if (committed !== undefined) continue;
      const pause = new AbortController();
      const woken = new Promise<void>((resolve) => (wake = resolve));
      const slept = cfg.clock.sleep(pollMs(), AbortSignal.any([stop, pause.signal])).catch(() => {});
      await Promise.race([woken, slept]);
      pause.abort();
      wake = undefined;
      if (stop.aborted) throw stopped();
    }
  } finally {
    watch?.close(); // on the next tick, off the ownership's path (wake-watch.ts)
  }
}
