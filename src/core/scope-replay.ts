/**
 * Where a coord watch that resumes after a generation starts: the one rule the scope object
 * and the in-memory coordinator share.
 *
 * Guarantees: when the oldest retained publish started at or below `afterGeneration`, the
 * retained publishes above it are exactly the ones the subscriber missed, so they are
 * replayed in order; otherwise one `replay` event describes the current state (every flag
 * false, the current root and key prefix), so a subscriber never misses the latest state.
 * Does not: keep or trim the history (each store does, with its own retention bound).
 */
import type { CoordEvent } from "../protocol/coord.ts";
import type { ScopeState } from "./scope-state.ts";

/** What a publish kept for replay must tell about itself. */
export interface RetainedPublish {
  generation: bigint;
  /** The generation the publish started from. */
  previousGeneration: bigint;
}

/** What a watch starting after a generation must be sent before live events. */
export type ReplayPlan =
  | { kind: "none" }
  /** Every retained publish from `fromIndex` on (oldest first), in order. */
  | { kind: "history"; fromIndex: number }
  /** History no longer reaches back: one event describing the current state. */
  | { kind: "summary"; event: CoordEvent };

/**
 * Plan the replay for a subscriber that has seen everything up to `afterGeneration`
 * (`undefined`: it has seen nothing and wants only live events).
 * @param retained the retained publishes, oldest first
 */
export function planReplay(
  state: ScopeState,
  retained: readonly RetainedPublish[],
  afterGeneration: bigint | undefined,
): ReplayPlan {
  if (afterGeneration === undefined || afterGeneration >= state.generation) return { kind: "none" };
  const oldest = retained[0];
  if (oldest !== undefined && oldest.previousGeneration <= afterGeneration) {
    return { kind: "history", fromIndex: retained.findIndex((p) => p.generation > afterGeneration) };
  }
  const { scope, generation, root, lastKeyPrefix } = state;
  return {
    kind: "summary",
    event: {
      processId: "",
      volumeId: scope.volumeId,
      objectStoreId: scope.objectStoreId,
      generation,
      wantLock: false,
      unlocked: false,
      rootChanged: root,
      keyPrefixChanged: lastKeyPrefix,
      fallbackReason: "",
      replay: true,
    },
  };
}
