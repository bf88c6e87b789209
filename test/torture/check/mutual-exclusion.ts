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
 * Bound claims (docs/protocol.md#sessions) — the holder of a claim bound to epoch E of its
 * generation is entitled to it from its acquire or commit until E ends. No client sees that
 * end; what the history proves is that E was live through its latest answered deadline, cut
 * at the first `lease/end` (or final state) that may have ended it (lease-epochs.ts
 * `liveThroughMs`). Judged against that bound, the rules above become, for the held record
 * just before an expiry that was bound: the `expired` event's time, and the next holder's
 * `acquiredAtMs`, must be after it. The later end the restart rule allows (a fresh instance
 * serves at least its first read's time + the ttl) is no entitlement (a holder may rely on
 * nothing past its deadline) — it bounds how long the claim may stay held, which
 * bound-release.ts judges. An acquisition after an expired hold that was not
 * observed is unjudged when that hold may have been bound (a bound acquire or commit by
 * its owner was answered or left unanswered before the acquisition): then its entitlement
 * is unknown.
 *
 * Generations — violation: an answer showing a lease epoch over (a later epoch, or no lease)
 * that completed before the instant that epoch was live through (lease-epochs.ts): a
 * keepalive, a restart or anything else ended it before a deadline the server had answered,
 * with no `lease/end` (or final state) that may have ended it. The server keeps every
 * deadline it answered, restarts included: a fresh instance serves at least its first read's
 * time + the ttl of every promise it did not write (docs/generations.md "The lease after a restart").
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
import { leaseEpochs, type LeaseEpochs } from "./lease-epochs.ts";
import {
  CLOCK_SLACK_MS,
  claimObservations,
  claimOps,
  groupBy,
  type Violation,
  type WireClaim,
} from "./observations.ts";

const CHECKER = "mutual-exclusion";
const EPOCH_WINDOW = 200;

export interface MutualExclusionResult {
  violations: Violation[];
  /** Acquisitions after an unobserved predecessor record, or an unobserved hold that may have been bound (not judged). */
  unjudged: number;
  /** Distinct expiry records, and acquisitions right after one, that were judged; `bound`: of them, those judged by an epoch. */
  judged: { acquisitions: number; expiries: number; bound: number };
}

export function checkMutualExclusion(history: readonly HistoryEntry[]): MutualExclusionResult {
  const violations: Violation[] = [];
  let unjudged = 0;
  const expiries = new Set<string>();
  const acquisitions = new Set<string>();
  const boundJudged = new Set<string>();
  const eventTimes = expiredEventTimes(history);
  const epochs = leaseEpochs(history);
  const binders = boundRequests(history);
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
        const entitled = held(before, record, timeMs ?? Infinity);
        if (timeMs !== undefined && entitled?.epoch === true) boundJudged.add(`${claim}@${record.version}`);
        if (timeMs !== undefined && entitled !== undefined && timeMs <= entitled.untilMs) {
          violations.push({
            checker: CHECKER,
            message: `${claim} token ${record.fencingToken}: expired event at ${timeMs}, not after ${entitled.what} ${entitled.untilMs} (${o.source})`,
          });
        }
      }
      if (record.reason === "acquired" && record.fencingToken !== "1") {
        if (before === undefined) {
          unjudged++;
          continue;
        }
        if (before.reason !== "expired") continue;
        const entitled = held(byVersion.get(String(version - 2n)), before, record.acquiredAtMs);
        if (entitled === undefined) {
          unjudged++; // the hold may have been bound, to an epoch nobody saw
          continue;
        }
        acquisitions.add(`${claim}@${record.version}`);
        if (entitled.epoch === true) boundJudged.add(`${claim}@${record.version}`);
        if (record.acquiredAtMs <= entitled.untilMs) {
          violations.push({
            checker: CHECKER,
            message: `${claim} token ${record.fencingToken} acquired by ${record.ownerGeneration} at ${record.acquiredAtMs} while token ${before.fencingToken} (${before.previousOwner}) held it until ${entitled.what} ${entitled.untilMs} (${o.source})`,
          });
        }
      }
    }
  }
  violations.push(...epochExclusion(epochs), ...leaseExclusion(history));
  const judged = { acquisitions: acquisitions.size, expiries: expiries.size, bound: boundJudged.size };
  return { violations, unjudged, judged };

  /**
   * Until when the holder was entitled to the claim that `expiry` (an `expired` record)
   * ended, judged at `atMs`: the held record before it, `hold`, says — its deadline, or for a
   * bound hold the instant its epoch was live through. Without `hold`, the deadline `expiry`
   * kept, unless a bound acquire or commit by its owner was asked before `atMs` (the hold
   * may have been bound): undefined, unjudged.
   */
  function held(hold: WireClaim | undefined, expiry: WireClaim, atMs: number): Entitlement | undefined {
    if (hold === undefined || hold.phase === "unowned") {
      const mayBeBound = binders.get(`${expiry.name}/${expiry.previousOwner}`)?.some((t) => t <= atMs) === true;
      return mayBeBound ? undefined : { untilMs: expiry.expiresAtMs, what: "its deadline" };
    }
    if (hold.bound !== true) return { untilMs: hold.expiresAtMs, what: "its deadline" };
    const epoch = BigInt(hold.leaseEpoch ?? "0");
    const { liveThroughMs } = epochs.bounds(hold.ownerGeneration, epoch);
    return { untilMs: liveThroughMs, what: `${hold.ownerGeneration}'s epoch ${epoch}, live through`, epoch: true };
  }
}

interface Entitlement {
  untilMs: number;
  what: string;
  /** Judged by a lease epoch (a bound hold). */
  epoch?: true;
}

/** Generation lease epochs seen over before the instant they were live through (see the module comment). */
function epochExclusion(epochs: LeaseEpochs): Violation[] {
  const violations: Violation[] = [];
  for (const { generation, epoch } of epochs.epochs()) {
    const { liveThroughMs, seenOverMs } = epochs.bounds(generation, epoch);
    if (seenOverMs + CLOCK_SLACK_MS <= liveThroughMs) {
      violations.push({
        checker: CHECKER,
        message: `generation ${generation}: epoch ${epoch} was answered over by ${seenOverMs}, but live through ${liveThroughMs}`,
      });
    }
  }
  return violations;
}

/** `claim/generation` → when each bound acquire or commit for that owner was asked (refused ones bind nothing). */
function boundRequests(history: readonly HistoryEntry[]): Map<string, number[]> {
  const asked = new Map<string, number[]>();
  for (const op of claimOps(history)) {
    if (op.body["bound"] !== true || op.result.type === "error") continue;
    const owner =
      op.verb === "acquire" ? op.body["generationId"] : op.verb === "commit" ? op.body["toGeneration"] : undefined;
    if (typeof owner !== "string") continue;
    const key = `${op.claim}/${owner}`;
    asked.set(key, [...(asked.get(key) ?? []), op.invokeMs]);
  }
  return asked;
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
