/**
 * The generation's lease (docs/protocol.md#sessions) as pure functions of (record, command,
 * nowMs): keepalive, end, expiry, and the restart rule of the persisted horizon.
 *
 * Guarantees:
 * - A lease is live at `nowMs` while `nowMs <= leaseExpiresAtMs` (expiry is strict, as for
 *   claims); `leaseExpiresAtMs` 0 means no lease. `leaseEpoch` grows by one each time a lease
 *   starts after none or after one expired or ended, and never otherwise, so a claim bound to
 *   an epoch can tell that it ended from the epoch alone.
 * - A keepalive extends the live lease to at least now + ttl and never shortens it; on a
 *   final generation (`retired`, `failed`) it is `invalid_state`. The end of a lease (its
 *   deadline passed, `lease/end`, a final state) is reported once, with its epoch, so the
 *   object can deliver it to the claims the epoch bound.
 * - {@link horizonAfter}: a keepalive needs a row written only when its deadline passes the
 *   persisted horizon, which is then set a slack beyond it; {@link deadlineAfterRestart}
 *   never yields a deadline earlier than any deadline answered before the restart.
 *
 * Does not: read a clock, touch storage or sockets (generation-object.ts does), or know
 * which claims an epoch bound (the object's store does).
 */
import type { GenerationRecord, LeaseEndReason } from "../protocol/generations.ts";

/** The end of an epoch, to deliver to the claims it bound. */
export interface LeaseEnd {
  epoch: bigint;
  reason: LeaseEndReason;
}

/** A lease-changing step: the record after it, and the epoch it ended, if any. */
export interface LeaseStep {
  record: GenerationRecord;
  ended?: LeaseEnd;
}

/** True when the record's lease is live at `nowMs`. */
export function leaseLive(record: GenerationRecord, nowMs: number): boolean {
  return record.leaseExpiresAtMs !== 0 && nowMs <= record.leaseExpiresAtMs;
}

/** End the lease now, for `reason` (no change when none is live or pending expiry). */
export function endLease(record: GenerationRecord, reason: LeaseEndReason): LeaseStep {
  if (record.leaseExpiresAtMs === 0) return { record };
  return { record: { ...record, leaseExpiresAtMs: 0 }, ended: { epoch: record.leaseEpoch, reason } };
}

/** Lazy expiry (and the alarm's): a lease whose deadline passed ends with reason `expired`. */
export function expireLease(record: GenerationRecord, nowMs: number): LeaseStep {
  if (record.leaseExpiresAtMs === 0 || leaseLive(record, nowMs)) return { record };
  return endLease(record, "expired");
}

/**
 * A keepalive of `ttlMs` on a generation that is not final: a lease whose deadline passed
 * ends first; then a live lease is extended (never shortened), or a new epoch starts.
 */
export function keepLease(record: GenerationRecord, ttlMs: number, nowMs: number): LeaseStep {
  const expired = expireLease(record, nowMs);
  const current = expired.record;
  const deadlineMs = nowMs + ttlMs;
  const next: GenerationRecord =
    current.leaseExpiresAtMs === 0
      ? { ...current, leaseEpoch: current.leaseEpoch + 1n, leaseExpiresAtMs: deadlineMs }
      : { ...current, leaseExpiresAtMs: Math.max(current.leaseExpiresAtMs, deadlineMs) };
  return expired.ended === undefined ? { record: next } : { record: next, ended: expired.ended };
}

/**
 * How far beyond an answered deadline the persisted horizon is set, for a keepalive of
 * `ttlMs`: two ttls, so that keepalives every ttl/3 write about one row in seven (at the
 * default 15 s ttl and 5 s interval, ≈ 0.14 rows per keepalive). After a restart a lease may
 * outlive a dead owner by at most this (docs/generations.md "The lease after a restart").
 */
export function horizonSlackMs(ttlMs: number): number {
  return 2 * ttlMs;
}

/**
 * The horizon to persist after answering `deadlineMs`, or undefined when the persisted
 * `horizonMs` already covers it (nothing to write).
 */
export function horizonAfter(deadlineMs: number, horizonMs: number, ttlMs: number): number | undefined {
  return deadlineMs <= horizonMs ? undefined : deadlineMs + horizonSlackMs(ttlMs);
}

/** What a fresh instance finds of a lease (generation-object.ts keeps the rows and the sockets). */
export interface LeaseEvidence {
  /** The deadline last written with the record (0: no lease). */
  storedDeadlineMs: number;
  /** Beyond every deadline an HTTP keepalive answered without writing. */
  httpHorizonMs: number;
  /** Beyond every deadline a channel's pings promised until the next alarm, should the channel vanish. */
  channelHorizonMs: number;
  /** The open channel's last ping + its ttl, when a channel survived (its pings are their own proof). */
  liveChannelDeadlineMs: number | undefined;
}

/**
 * The deadline a fresh instance serves: never earlier than any deadline an earlier instance
 * answered. The HTTP horizon always counts (those answers left no trace); the channel's
 * horizon counts only when no channel survived, since a surviving channel's last ping is the
 * exact evidence and the horizon's slack would keep a dead owner's lease for nothing. 0 stays
 * 0: no lease.
 */
export function deadlineAfterRestart(evidence: LeaseEvidence): number {
  if (evidence.storedDeadlineMs === 0) return 0;
  const channel = evidence.liveChannelDeadlineMs ?? evidence.channelHorizonMs;
  return Math.max(evidence.storedDeadlineMs, evidence.httpHorizonMs, channel);
}
