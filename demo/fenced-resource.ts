/**
 * The demo's protected resource: a store that writes through a fence (shiftlock/fence's
 * {@link MemoryFence}, keyed by the claim's fence key `{ns}/claims/{name}`: a write with a
 * token below the highest accepted is refused) and keeps a log of every attempt, accepted
 * or not, for the timeline and the invariant checks.
 */
import { FenceRejected, MemoryFence, claimFenceKey } from "../src/client/fence/index.ts";

export interface WriteAttempt {
  /** ms since the demo started (local clock). */
  atMs: number;
  claim: string;
  generation: string;
  token: bigint;
  accepted: boolean;
  /** Set when the write was sent deliberately by a fenced-out writer. */
  stale?: boolean;
}

export class FencedResource {
  private readonly fence = new MemoryFence();
  readonly log: WriteAttempt[] = [];

  constructor(
    private readonly now: () => number,
    private readonly namespace: string,
  ) {}

  /** One write: accepted iff `token` is not older than the newest token this claim has seen. */
  write(claim: string, generation: string, token: bigint, stale = false): boolean {
    const attempt = (accepted: boolean): WriteAttempt => ({
      atMs: this.now(),
      claim,
      generation,
      token,
      accepted,
      ...(stale ? { stale } : {}),
    });
    try {
      this.fence.guard(claimFenceKey(this.namespace, claim), token, () => this.log.push(attempt(true)));
      return true;
    } catch (err) {
      if (!(err instanceof FenceRejected)) throw err;
      this.log.push(attempt(false));
      return false;
    }
  }

  /**
   * The invariants a reader relies on, per claim: accepted writes carry non-decreasing
   * tokens, every write older than the newest accepted token was rejected, and no write of
   * the old generation was accepted after the new generation's first one.
   */
  violations(): string[] {
    const problems: string[] = [];
    const byClaim = new Map<string, WriteAttempt[]>();
    for (const w of this.log) {
      const writes = byClaim.get(w.claim);
      if (writes === undefined) byClaim.set(w.claim, [w]);
      else writes.push(w);
    }
    for (const [claim, writes] of byClaim) {
      let highest = 0n;
      let newGenerationSeen: string | undefined;
      for (const w of writes) {
        if (w.accepted && w.token < highest) problems.push(`${claim}: accepted token ${w.token} after ${highest}`);
        if (!w.accepted && w.token >= highest && w.token !== 0n) {
          problems.push(`${claim}: rejected a current token ${w.token}`);
        }
        if (w.accepted && w.token > highest && highest !== 0n) newGenerationSeen = w.generation;
        if (w.accepted && newGenerationSeen !== undefined && w.generation !== newGenerationSeen) {
          problems.push(`${claim}: ${w.generation} wrote after ${newGenerationSeen} took over`);
        }
        if (w.accepted && w.token > highest) highest = w.token;
      }
    }
    return problems;
  }
}
