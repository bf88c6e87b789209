// The batch-pruning rule both retained histories apply (src/durable/history-pruning.ts): a
// claim counts its events, a scope keys its publishes by a gapless sequence; both must keep
// the protocol's "at least 256" and prune at the same appends.
import { describe, expect, it } from "vitest";
import { PRUNE_BATCH_EVENTS, entriesToPrune, pruneThroughSeq } from "../../src/durable/history-pruning.ts";
import { RETAINED_EVENTS } from "../../src/protocol/watch.ts";

/** Append `appends` entries to a history that already holds `oldest..newest`, pruning by sequence. */
function bySequence(oldest: number, newest: number, appends: number): number[] {
  const retained: number[] = [];
  let low = oldest;
  for (let seq = newest + 1; seq <= newest + appends; seq++) {
    const through = pruneThroughSeq(seq);
    if (through !== undefined) low = Math.max(low, through + 1);
    retained.push(seq - low + 1);
  }
  return retained;
}

/** The same appends to a history of `count` entries, pruning by count. */
function byCount(count: number, appends: number): number[] {
  const retained: number[] = [];
  let n = count;
  for (let i = 0; i < appends; i++) {
    n += 1;
    n -= entriesToPrune(n);
    retained.push(n);
  }
  return retained;
}

describe("history pruning", () => {
  it("keeps at least RETAINED_EVENTS and prunes once a batch beyond it has accumulated", () => {
    const retained = byCount(0, 2_000);
    expect(Math.min(...retained.slice(RETAINED_EVENTS))).toBe(RETAINED_EVENTS);
    expect(Math.max(...retained)).toBe(RETAINED_EVENTS + PRUNE_BATCH_EVENTS - 1);
    // Pruned on one append in PRUNE_BATCH_EVENTS, never on the others.
    const prunes = retained.filter((n, i) => i > 0 && n < (retained[i - 1] ?? 0)).length;
    expect(prunes).toBe(Math.floor((2_000 - RETAINED_EVENTS) / PRUNE_BATCH_EVENTS));
  });

  it("by sequence prunes exactly where counting would, from empty", () => {
    expect(bySequence(1, 0, 2_000)).toEqual(byCount(0, 2_000));
  });

  it("by sequence keeps the bound for a history an every-append pruner left (256 retained)", () => {
    // An earlier version deleted down to 256 on every publish: 1001..1256 retained.
    const retained = bySequence(1_001, 1_256, 500);
    expect(Math.min(...retained)).toBe(RETAINED_EVENTS);
    expect(Math.max(...retained)).toBeLessThan(RETAINED_EVENTS + PRUNE_BATCH_EVENTS);
  });

  it("prunes nothing while the history is within the bound", () => {
    for (let n = 0; n <= RETAINED_EVENTS + PRUNE_BATCH_EVENTS - 1; n++) expect(entriesToPrune(n)).toBe(0);
    for (let seq = 1; seq <= RETAINED_EVENTS + PRUNE_BATCH_EVENTS - 1; seq++)
      expect(pruneThroughSeq(seq)).toBeUndefined();
  });
});
