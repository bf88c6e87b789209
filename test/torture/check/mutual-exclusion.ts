/**
 * Checker: mutual exclusion, judged by the server's own records.
 *
 * Claims — violations (each needs the record just before, at version v − 1, observed):
 * - an `expired` record whose deadline differs from the deadline of the held record before
 *   it (expiry keeps `expiresAtMs`: a different one means a renewal was lost or invented);
 * - an `expired` watch event whose time is not after that deadline (expired early);
 * - an `acquired` record (a new token) right after an `expired` one whose `acquiredAtMs` is
 *   not after the expired deadline (the previous holder was still entitled to the claim).
 *   After `released` a new holder is legal at once; when the record before an acquisition
 *   was not observed, the case is counted as unjudged.
 *
 * Coord — violation: lease B granted (at its grant's `expiresAtMs − ttlMs`, the server's
 * own instant) while an earlier lease A of the same scope was entitled to it: the last
 * acknowledged grant or keepalive of A applied before that instant (applied at
 * `expiresAtMs − ttlMs` too) set a deadline not before it, nobody had asked to release A
 * before B's grant was answered, and no keepalive of A with an unknown outcome (which could
 * have shortened it) was asked before. Only the 200 epochs before B are compared (leases
 * live ≤ 2 s, far fewer epochs than that).
 */
import type { HistoryEntry } from "../history.ts";
import { claimObservations, groupBy, type Violation, type WireClaim } from "./observations.ts";

const CHECKER = "mutual-exclusion";
const EPOCH_WINDOW = 200;

export interface MutualExclusionResult {
  violations: Violation[];
  /** Acquisitions after an unobserved predecessor record (not judged). */
  unjudged: number;
  /** Distinct expiry records, and acquisitions right after one, that were judged. */
  judged: { acquisitions: number; expiries: number };
}

export function checkMutualExclusion(history: readonly HistoryEntry[]): MutualExclusionResult {
  const violations: Violation[] = [];
  let unjudged = 0;
  const expiries = new Set<string>();
  const acquisitions = new Set<string>();
  const eventTimes = expiredEventTimes(history);
  for (const [claim, seen] of groupBy(claimObservations(history), (o) => o.claim.name)) {
    const byVersion = new Map<string, WireClaim>();
    for (const o of seen) byVersion.set(o.claim.version, o.claim);
    for (const o of seen) {
      const record = o.claim;
      const version = BigInt(record.version);
      const before = byVersion.get(String(version - 1n));
      if (record.reason === "expired") {
        expiries.add(`${claim}@${record.version}`);
        if (before !== undefined && before.phase !== "unowned" && before.expiresAtMs !== record.expiresAtMs) {
          violations.push({
            checker: CHECKER,
            message: `${claim} token ${record.fencingToken} expired at version ${record.version} with deadline ${record.expiresAtMs}, but version ${before.version} had deadline ${before.expiresAtMs} (${o.source})`,
          });
        }
        const timeMs = eventTimes.get(`${claim}@${record.version}`);
        if (timeMs !== undefined && timeMs <= record.expiresAtMs) {
          violations.push({
            checker: CHECKER,
            message: `${claim} token ${record.fencingToken}: expired event at ${timeMs}, not after its deadline ${record.expiresAtMs} (${o.source})`,
          });
        }
      }
      if (record.reason === "acquired" && record.fencingToken !== "1") {
        if (before === undefined) {
          unjudged++;
          continue;
        }
        if (before.reason === "expired") acquisitions.add(`${claim}@${record.version}`);
        if (before.reason === "expired" && record.acquiredAtMs <= before.expiresAtMs) {
          violations.push({
            checker: CHECKER,
            message: `${claim} token ${record.fencingToken} acquired by ${record.ownerGeneration} at ${record.acquiredAtMs} while token ${before.fencingToken} (${before.previousOwner}) held it until ${before.expiresAtMs} (${o.source})`,
          });
        }
      }
    }
  }
  violations.push(...leaseExclusion(history));
  return { violations, unjudged, judged: { acquisitions: acquisitions.size, expiries: expiries.size } };
}

/** `claim@version` → `timeMs` of every `expired` event the watchers received. */
function expiredEventTimes(history: readonly HistoryEntry[]): Map<string, number> {
  const times = new Map<string, number>();
  for (const entry of history) {
    if (entry.t !== "watch" || entry.kind !== "message") continue;
    const msg = entry.msg as { type?: string; reason?: string; claim?: WireClaim; timeMs?: number };
    if (msg.type === "event" && msg.reason === "expired" && msg.claim !== undefined && msg.timeMs !== undefined) {
      times.set(`${msg.claim.name}@${msg.claim.version}`, msg.timeMs);
    }
  }
  return times;
}

interface Grant {
  scope: string;
  leaseId: string;
  epoch: bigint;
  grantedAtMs: number;
  answeredMs: number;
  /** Acknowledged deadlines: (applied at, until), the grant's first. */
  deadlines: { atMs: number; untilMs: number }[];
  /** When someone first asked to release it (Infinity: never). */
  releaseAskedMs: number;
  /** When a keepalive with an unknown outcome was first asked (Infinity: never). */
  unsureMs: number;
}

/** The deadline `grant` had at `atMs` by its acknowledged calls (0 if none applied yet). */
function deadlineAt(grant: Grant, atMs: number): number {
  let last: { atMs: number; untilMs: number } | undefined;
  for (const d of grant.deadlines) if (d.atMs < atMs && (last === undefined || d.atMs >= last.atMs)) last = d;
  return last?.untilMs ?? 0;
}

function leaseExclusion(history: readonly HistoryEntry[]): Violation[] {
  const grants = new Map<string, Grant>();
  const ops = history.filter((e) => e.t === "op");
  for (const op of ops) {
    if ((op.route === "leaseTry" || op.route === "leaseWait") && op.outcome.type === "ok") {
      const lease = (op.outcome.body as { lease: { leaseId: string; epoch: string; expiresAtMs: number } }).lease;
      const ttlMs = (op.request as { ttlMs: number }).ttlMs;
      grants.set(lease.leaseId, {
        scope: op.target,
        leaseId: lease.leaseId,
        epoch: BigInt(lease.epoch),
        grantedAtMs: lease.expiresAtMs - ttlMs,
        answeredMs: op.completeMs,
        deadlines: [{ atMs: lease.expiresAtMs - ttlMs, untilMs: lease.expiresAtMs }],
        releaseAskedMs: Infinity,
        unsureMs: Infinity,
      });
    }
  }
  for (const op of ops) {
    const grant = op.leaseId === undefined ? undefined : grants.get(op.leaseId);
    if (grant === undefined) continue;
    if (op.route === "keepalive" && op.outcome.type === "ok") {
      const lease = (op.outcome.body as { lease: { expiresAtMs: number } }).lease;
      const ttlMs = (op.request as { ttlMs: number }).ttlMs;
      grant.deadlines.push({ atMs: lease.expiresAtMs - ttlMs, untilMs: lease.expiresAtMs });
    }
    if (op.route === "keepalive" && op.outcome.type === "unknown")
      grant.unsureMs = Math.min(grant.unsureMs, op.invokeMs);
    if (op.route === "leaseRelease") grant.releaseAskedMs = Math.min(grant.releaseAskedMs, op.invokeMs);
  }
  const violations: Violation[] = [];
  for (const [scope, leases] of groupBy([...grants.values()], (g) => g.scope)) {
    leases.sort((a, b) => (a.epoch < b.epoch ? -1 : 1));
    leases.forEach((b, i) => {
      for (const a of leases.slice(Math.max(0, i - EPOCH_WINDOW), i)) {
        const until = deadlineAt(a, b.grantedAtMs);
        if (b.grantedAtMs <= until && a.releaseAskedMs > b.answeredMs && a.unsureMs > b.grantedAtMs) {
          violations.push({
            checker: CHECKER,
            message: `${scope}: lease epoch ${b.epoch} granted at ${b.grantedAtMs} while epoch ${a.epoch} was acknowledged until ${until} and never released`,
          });
        }
      }
    });
  }
  return violations;
}
