/**
 * The fence checker: per fence (resource + fence key, + object for R2), no accepted write
 * carries a token lower than one accepted before it, and no write was refused without a
 * reason.
 *
 * "Before" is real time as the harness saw it: write V is before write W when V's answer
 * arrived before W was sent. Guarantees:
 * - **monotonic**: an accepted W whose token is below that of an accepted V before it is a
 *   violation (the stale owner overwrote a newer one);
 * - **justified refusal**: a refused W needs an accepted V with a higher token that was sent
 *   before W's answer arrived (otherwise the fence refused a current owner).
 * Writes whose outcome is unknown (a transport error) are ignored: they may or may not have
 * been applied, and either is allowed.
 *
 * Does not: compare writes of different fences, nor check what the stores hold (each
 * fence's own tests do).
 */
import type { Violation } from "./observations.ts";

/** One write through a fence, as the harness observed it. */
export interface FenceWrite {
  /** `do`, `d1`, `r2`, `sqlite`, `postgres`, `memory`. */
  resource: string;
  /** The fence key, and for R2 the object (`key#object`): what the fence guards. */
  fence: string;
  token: bigint;
  /** Send and answer times (ms, one monotonic clock). */
  sentMs: number;
  answeredMs: number;
  outcome: "accepted" | "refused" | "unknown";
}

export function checkFences(writes: readonly FenceWrite[]): Violation[] {
  const violations: Violation[] = [];
  const groups = new Map<string, FenceWrite[]>();
  for (const w of writes) {
    const id = `${w.resource} ${w.fence}`;
    const group = groups.get(id);
    if (group === undefined) groups.set(id, [w]);
    else group.push(w);
  }
  for (const [id, group] of groups) {
    const accepted = group.filter((w) => w.outcome === "accepted");
    const byAnswer = [...accepted].sort((a, b) => a.answeredMs - b.answeredMs);
    const bySend = [...group].sort((a, b) => a.sentMs - b.sentMs);
    // Sweep: the highest token among accepted writes answered before each write was sent.
    let i = 0;
    let highest: FenceWrite | undefined;
    for (const w of bySend) {
      while (i < byAnswer.length && byAnswer[i]!.answeredMs < w.sentMs) {
        const v = byAnswer[i++]!;
        if (highest === undefined || v.token > highest.token) highest = v;
      }
      if (w.outcome === "accepted" && highest !== undefined && w.token < highest.token) {
        violations.push({
          checker: "fences",
          message: `${id}: accepted token ${w.token} (sent at ${w.sentMs.toFixed(1)} ms) after token ${highest.token} was accepted (answered at ${highest.answeredMs.toFixed(1)} ms)`,
        });
      }
    }
    for (const w of group) {
      if (w.outcome !== "refused") continue;
      const reason = accepted.some((v) => v.token > w.token && v.sentMs < w.answeredMs);
      if (!reason) {
        violations.push({
          checker: "fences",
          message: `${id}: refused token ${w.token} (answered at ${w.answeredMs.toFixed(1)} ms) with no higher token accepted before`,
        });
      }
    }
  }
  return violations;
}
