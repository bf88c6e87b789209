/**
 * When a retained history — a claim's events, a scope's publishes — is pruned: the one rule
 * both stores apply inside the transaction that appends to it (docs/adr/0005-retention.md).
 *
 * Guarantees:
 * - At least {@link RETAINED_EVENTS} entries are kept (what the protocol promises a watch
 *   that resumes); at most {@link RETAINED_EVENTS} + {@link PRUNE_BATCH_EVENTS} − 1.
 * - Pruning is due only once {@link PRUNE_BATCH_EVENTS} entries beyond the bound have
 *   accumulated, and then removes all of them: the append that pays for pruning (its
 *   `DELETE`, its "pruned through" mark) is one in {@link PRUNE_BATCH_EVENTS}, and every
 *   other append costs what it costs on a short history.
 *
 * Does not: touch storage (the stores run the statements) or prune operation records
 * (their own bounds: core/claim-operations.ts).
 */
import { RETAINED_EVENTS } from "../protocol/watch.ts";

/** Entries beyond {@link RETAINED_EVENTS} that accumulate before one append prunes them all. */
export const PRUNE_BATCH_EVENTS = 64;

/** How many of the oldest entries to delete from a history now holding `retained` (0: not due). */
export function entriesToPrune(retained: number): number {
  const excess = retained - RETAINED_EVENTS;
  return excess >= PRUNE_BATCH_EVENTS ? excess : 0;
}

/**
 * For a history keyed by a gapless sequence from 1 whose oldest entries alone are ever
 * deleted (so that it holds every entry above the last prune): the highest sequence to delete
 * once entry `seq` was appended, or undefined when pruning is not due. From an empty history
 * it is due exactly when {@link entriesToPrune} would be; for one an earlier version pruned on
 * every append (256 held) it may first prune fewer than {@link PRUNE_BATCH_EVENTS}, within
 * the same bounds.
 */
export function pruneThroughSeq(seq: number): number | undefined {
  return seq > RETAINED_EVENTS && seq % PRUNE_BATCH_EVENTS === 0 ? seq - RETAINED_EVENTS : undefined;
}
