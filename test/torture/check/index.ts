/**
 * Every checker over one history, and the report the command prints.
 *
 * Guarantees: each checker is a pure function of the history (see its file for what it
 * checks); a checker that gives up (the linearizability search past its budget) says so in
 * the report and does not count that as a violation.
 */
import type { HistoryEntry } from "../history.ts";
import { checkClaimRecords } from "./claim-records.ts";
import { checkCoord } from "./coord.ts";
import { checkDurability } from "./durability.ts";
import { checkIdempotency } from "./idempotency.ts";
import { checkLinearizability } from "./linearizability.ts";
import { checkMutualExclusion } from "./mutual-exclusion.ts";
import { checkWatches, watchCoverage } from "./watches.ts";
import type { Violation } from "./observations.ts";

export interface CheckReport {
  violations: number;
  /** Human-readable lines: per-checker counts, then the first violations of each. */
  lines: string[];
}

interface Checker {
  name: string;
  run: (history: readonly HistoryEntry[]) => { violations: Violation[]; notes?: string[] };
}

const CHECKERS: Checker[] = [
  { name: "claim-records", run: (h) => ({ violations: checkClaimRecords(h) }) },
  {
    name: "mutual-exclusion",
    run: (h) => {
      const r = checkMutualExclusion(h);
      return {
        violations: r.violations,
        notes: [
          `${r.judged.expiries} expiries and ${r.judged.acquisitions} acquisitions right after an expiry judged; ${r.unjudged} acquisitions after an unobserved record not judged`,
        ],
      };
    },
  },
  { name: "durability", run: (h) => ({ violations: checkDurability(h) }) },
  { name: "idempotency", run: (h) => ({ violations: checkIdempotency(h) }) },
  { name: "coord", run: (h) => ({ violations: checkCoord(h) }) },
  {
    name: "watches",
    run: (h) => {
      const c = watchCoverage(h);
      return {
        violations: checkWatches(h),
        notes: [
          `${c.messages} messages over ${c.connections} connections; ${c.rewinds} rewound resumes, ${c.replayed} events sent again on them, ${c.truncated} truncated snapshots, ${c.replays} coord replay events`,
        ],
      };
    },
  },
  {
    name: "linearizability",
    run: (h) => {
      const r = checkLinearizability(h);
      return {
        violations: r.violations,
        notes: [
          `${r.segments} segments; gave up on ${r.gaveUp} (${r.gaveUpOps} ops); ${r.skippedOps} ops not checked (after a give-up, or refusals the machine does not decide)`,
        ],
      };
    },
  },
];

/** Run every checker; at most `shown` violations of each are spelled out. */
export function runChecks(history: readonly HistoryEntry[], shown = 10): CheckReport {
  const lines: string[] = [];
  let violations = 0;
  for (const checker of CHECKERS) {
    const started = Date.now();
    const result = checker.run(history);
    violations += result.violations.length;
    lines.push(`check ${checker.name}: ${result.violations.length} violations (${Date.now() - started} ms)`);
    for (const note of result.notes ?? []) lines.push(`  ${note}`);
    for (const v of result.violations.slice(0, shown)) lines.push(`  VIOLATION ${v.message}`);
  }
  return { violations, lines };
}
