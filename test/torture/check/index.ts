/**
 * Every checker over one history, and the report the command prints.
 *
 * Guarantees: each checker is a pure function of the history (see its file for what it
 * checks); operations a checker skips or gives up on (the linearizability search past its
 * budget) are counted as `unchecked` in the report, never as violations.
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
  /** Operations a checker skipped or gave up on (today only linearizability does). */
  unchecked: number;
  /** Human-readable lines: per-checker counts, then the first violations of each. */
  lines: string[];
}

interface Checker {
  name: string;
  run: (history: readonly HistoryEntry[]) => { violations: Violation[]; notes?: string[]; unchecked?: number };
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
        unchecked: r.unchecked,
        notes: [
          `${r.checked} ops judged over ${r.versions} answered versions; ${r.unchecked} unchecked (${r.gaveUp} stretches given up past the budget, refusals nothing judged around them, bodies the route refuses)`,
        ],
      };
    },
  },
];

/** Run every checker; at most `shown` violations of each are spelled out. */
export function runChecks(history: readonly HistoryEntry[], shown = 10): CheckReport {
  const lines: string[] = [];
  let violations = 0;
  let unchecked = 0;
  for (const checker of CHECKERS) {
    const started = Date.now();
    const result = checker.run(history);
    violations += result.violations.length;
    unchecked += result.unchecked ?? 0;
    lines.push(`check ${checker.name}: ${result.violations.length} violations (${Date.now() - started} ms)`);
    for (const note of result.notes ?? []) lines.push(`  ${note}`);
    for (const v of result.violations.slice(0, shown)) lines.push(`  VIOLATION ${v.message}`);
  }
  return { violations, unchecked, lines };
}
