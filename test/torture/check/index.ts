/**
 * Every checker over one history, and the report the command prints.
 *
 * Guarantees: each checker is a pure function of the history (see its file for what it
 * checks); operations a checker skips or gives up on (the linearizability search past its
 * budget, a listing difference still within its bound when the run stopped) are counted as
 * `unchecked` in the report, never as violations. The listing checker's findings are counted
 * apart, as `listingMismatches`: the listing is a lagging copy, not the truth, and its
 * mismatches are a failure of their own (the run fails on either).
 */
import type { HistoryEntry } from "../history.ts";
import { checkBoundRelease } from "./bound-release.ts";
import { checkClaimRecords } from "./claim-records.ts";
import { checkCoord } from "./coord.ts";
import { checkDurability } from "./durability.ts";
import { checkIdempotency } from "./idempotency.ts";
import { checkLinearizability } from "./linearizability.ts";
import { checkListing } from "./listing.ts";
import { checkMutualExclusion } from "./mutual-exclusion.ts";
import { checkWatches, watchCoverage } from "./watches.ts";
import type { Violation } from "./observations.ts";

export interface CheckReport {
  violations: number;
  /** Listing entries that differ from their objects past the lag bound, and wrong `/stats` tallies. */
  listingMismatches: number;
  /** Operations a checker skipped or gave up on (today only linearizability does). */
  unchecked: number;
  /** Human-readable lines: per-checker counts, then the first violations of each. */
  lines: string[];
}

interface Checker {
  name: string;
  /** Counted as listing mismatches rather than violations. */
  listing?: true;
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
          `${r.judged.expiries} expiries and ${r.judged.acquisitions} acquisitions right after an expiry judged (${r.judged.bound} of these judged against a bound hold's epoch); ${r.unjudged} acquisitions after an unobserved record, or an unobserved hold that may have been bound, not judged`,
        ],
      };
    },
  },
  {
    name: "bound-release",
    run: (h) => {
      const r = checkBoundRelease(h);
      return { violations: r.violations, notes: [`${r.judged} records bound to an ended epoch judged`] };
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
  {
    name: "listing",
    listing: true,
    run: (h) => {
      const r = checkListing(h);
      return {
        violations: r.violations,
        unchecked: r.unjudged,
        notes: [
          `${r.checks} quiet points, ${r.compared} objects compared with the listing; ${r.unjudged} differences still within the lag bound when the run stopped`,
        ],
      };
    },
  },
];

/** Run every checker; at most `shown` violations of each are spelled out. */
export function runChecks(history: readonly HistoryEntry[], shown = 10): CheckReport {
  const lines: string[] = [];
  let violations = 0;
  let listingMismatches = 0;
  let unchecked = 0;
  for (const checker of CHECKERS) {
    const started = Date.now();
    const result = checker.run(history);
    const found = result.violations.length;
    if (checker.listing === true) listingMismatches += found;
    else violations += found;
    unchecked += result.unchecked ?? 0;
    const what = checker.listing === true ? "mismatches" : "violations";
    lines.push(`check ${checker.name}: ${found} ${what} (${Date.now() - started} ms)`);
    for (const note of result.notes ?? []) lines.push(`  ${note}`);
    const label = checker.listing === true ? "MISMATCH" : "VIOLATION";
    for (const v of result.violations.slice(0, shown)) lines.push(`  ${label} ${v.message}`);
  }
  return { violations, listingMismatches, unchecked, lines };
}
