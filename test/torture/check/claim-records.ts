/**
 * Checker: per-claim record consistency, from every record anyone saw.
 *
 * Violations:
 * - two observations of one claim at the same version that differ in any field;
 * - real-time order broken: an observation that began after another had completed shows
 *   an older version;
 * - the fencing token decreasing as the version grows;
 * - one fencing token held by two generations (two different owners with the same token).
 */
import type { HistoryEntry } from "../history.ts";
import { claimObservations, groupBy, type ClaimObservation, type Violation } from "./observations.ts";

const CHECKER = "claim-records";

/** Canonical JSON (sorted keys) so field order does not matter. */
function canonical(value: object): string {
  return JSON.stringify(value, Object.keys(value).sort());
}

export function checkClaimRecords(history: readonly HistoryEntry[]): Violation[] {
  const violations: Violation[] = [];
  for (const [claim, seen] of groupBy(claimObservations(history), (o) => o.claim.name)) {
    sameVersionSameRecord(claim, seen, violations);
    realTimeOrder(claim, seen, violations);
    tokens(claim, seen, violations);
  }
  return violations;
}

function sameVersionSameRecord(claim: string, seen: ClaimObservation[], out: Violation[]): void {
  const byVersion = new Map<string, ClaimObservation>();
  for (const o of seen) {
    const first = byVersion.get(o.claim.version);
    if (first === undefined) byVersion.set(o.claim.version, o);
    else if (canonical(first.claim) !== canonical(o.claim)) {
      out.push({
        checker: CHECKER,
        message: `${claim} version ${o.claim.version}: ${first.source} saw ${canonical(first.claim)}, ${o.source} saw ${canonical(o.claim)}`,
      });
    }
  }
}

function realTimeOrder(claim: string, seen: ClaimObservation[], out: Violation[]): void {
  const byComplete = [...seen].sort((a, b) => a.completeMs - b.completeMs);
  const byInvoke = [...seen].sort((a, b) => a.invokeMs - b.invokeMs);
  let i = 0;
  let newest: ClaimObservation | undefined;
  for (const o of byInvoke) {
    while (i < byComplete.length && byComplete[i]!.completeMs < o.invokeMs) {
      const done = byComplete[i++]!;
      if (newest === undefined || BigInt(done.claim.version) > BigInt(newest.claim.version)) newest = done;
    }
    if (newest !== undefined && BigInt(o.claim.version) < BigInt(newest.claim.version)) {
      out.push({
        checker: CHECKER,
        message: `${claim}: ${o.source} (invoked ${o.invokeMs}) saw version ${o.claim.version} after ${newest.source} had seen version ${newest.claim.version} (completed ${newest.completeMs})`,
      });
    }
  }
}

function tokens(claim: string, seen: ClaimObservation[], out: Violation[]): void {
  const byVersion = [...seen].sort((a, b) => (BigInt(a.claim.version) < BigInt(b.claim.version) ? -1 : 1));
  let previous: ClaimObservation | undefined;
  const owners = new Map<string, ClaimObservation>();
  for (const o of byVersion) {
    if (previous !== undefined && BigInt(o.claim.fencingToken) < BigInt(previous.claim.fencingToken)) {
      out.push({
        checker: CHECKER,
        message: `${claim}: token ${o.claim.fencingToken} at version ${o.claim.version} (${o.source}) is below token ${previous.claim.fencingToken} at version ${previous.claim.version} (${previous.source})`,
      });
    }
    previous = o;
    if (o.claim.ownerGeneration === "") continue;
    const holder = owners.get(o.claim.fencingToken);
    if (holder === undefined) owners.set(o.claim.fencingToken, o);
    else if (holder.claim.ownerGeneration !== o.claim.ownerGeneration) {
      out.push({
        checker: CHECKER,
        message: `${claim}: token ${o.claim.fencingToken} held by ${holder.claim.ownerGeneration} (${holder.source}) and by ${o.claim.ownerGeneration} (${o.source})`,
      });
    }
  }
}
