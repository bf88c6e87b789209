/**
 * Where a claim watch that resumes after a version starts: the one rule the claim object and
 * the in-memory claims backend share (beside scope-replay.ts for coord).
 *
 * Guarantees: when every event above `afterVersion` is still retained (nothing at or above
 * it was pruned) and `afterVersion` is not ahead of the claim, the retained events above it
 * are exactly the ones the subscriber missed; otherwise the subscriber gets a `truncated`
 * snapshot (history no longer reaches back, or it saw a version this claim never had — a
 * backend that was reset), so it never misses the latest state.
 * Does not: keep or trim the history (each store does, keeping {@link RETAINED_EVENTS}).
 */
export { RETAINED_EVENTS } from "../protocol/watch.ts";

/** What a claim watch must be sent before live events. */
export type ClaimReplayPlan =
  /** No `afterVersion`: the current record as a snapshot. */
  | { kind: "snapshot" }
  /** Every retained event with a version above `afterVersion`, oldest first. */
  | { kind: "events"; afterVersion: bigint }
  /** History does not reach `afterVersion`: a snapshot marked `truncated`. */
  | { kind: "truncated" };

/**
 * @param prunedThrough the highest version whose event may have been dropped (0: none was)
 * @param currentVersion the claim's version (0 when it was never acquired)
 */
export function planClaimReplay(
  afterVersion: bigint | undefined,
  currentVersion: bigint,
  prunedThrough: bigint,
): ClaimReplayPlan {
  if (afterVersion === undefined) return { kind: "snapshot" };
  if (afterVersion < prunedThrough || afterVersion > currentVersion) return { kind: "truncated" };
  return { kind: "events", afterVersion };
}
