/**
 * The generation's lease (docs/protocol.md#sessions) as pure functions of (record, command,
 * nowMs): keepalive, end, expiry, the restart rule of the unwritten promises, and when the
 * alarm looks at a live lease.
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
 * - {@link promiseAfter}: a keepalive needs a row written only when its ttl is longer than
 *   the unwritten promises' persisted ttl; {@link deadlineAfterRestart} never yields a
 *   deadline earlier than any deadline answered before the restart, and exceeds the last one
 *   by at most the time from it to the fresh instance's first read.
 * - {@link noticeAtMs}: the alarm looks at a live lease at its deadline, or at most the
 *   configured notice grace ({@link leaseNoticeTtls}) of its ttls after it.
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

/** The last epoch whose end is owed to its claims: the current one once it is not live. */
export function endedThrough(record: GenerationRecord, nowMs: number): bigint {
  return leaseLive(record, nowMs) ? record.leaseEpoch - 1n : record.leaseEpoch;
}

/** True when `a` and `b` differ in nothing but the lease deadline (a keepalive's change). */
export function sameButDeadline(a: GenerationRecord, b: GenerationRecord): boolean {
  return (
    a.state === b.state &&
    a.reason === b.reason &&
    a.updatedAtMs === b.updatedAtMs &&
    a.leaseEpoch === b.leaseEpoch &&
    (a.leaseExpiresAtMs === 0) === (b.leaseExpiresAtMs === 0)
  );
}

/**
 * How many of its ttls after a lapsed lease's deadline the generation's alarm waits before it
 * notices the lapse: ends the epoch by itself, tells its channels and delivers the end to its
 * bound claims. Anyone who asks (a contending acquire, a `GET`, a keepalive) sees the exact
 * deadline whatever this is; only the unasked notice waits. By default none: the alarm is at
 * the deadline and watchers hear `expired` within about a second of it (docs/protocol.md).
 * A kept lease's alarm fires about once per ttl then, which is most of what a kept lease
 * costs; a deployment may set `LEASE_NOTICE_TTLS` (up to {@link MAX_LEASE_NOTICE_TTLS}) to
 * fire it about once per (1 + n) ttls instead, the notice then coming up to n ttls late, as
 * Consul invalidates a session up to twice its TTL late (docs/generations.md).
 */
export const DEFAULT_LEASE_NOTICE_TTLS = 0;
export const MAX_LEASE_NOTICE_TTLS = 3;

/** The configured notice grace in ttls: a whole number 0…{@link MAX_LEASE_NOTICE_TTLS}, else the default. */
export function leaseNoticeTtls(text: string | undefined): number {
  const n = Number(text);
  return text !== undefined && text !== "" && Number.isInteger(n) && n >= 0 && n <= MAX_LEASE_NOTICE_TTLS
    ? n
    : DEFAULT_LEASE_NOTICE_TTLS;
}

/** When the alarm should next look at a lease of `ttlMs` whose deadline is `deadlineMs`. */
export function noticeAtMs(deadlineMs: number, ttlMs: number, noticeTtls = DEFAULT_LEASE_NOTICE_TTLS): number {
  return deadlineMs + noticeTtls * ttlMs + 1;
}

/**
 * Promises the row does not hold: the longest ttl of the HTTP keepalives, and of the lease
 * channels, answered since the row last covered them (0: none). A keepalive answered inside
 * them writes nothing; each answered deadline is at most the instant it was answered + its ttl.
 */
export interface LeasePromises {
  httpTtlMs: number;
  channelTtlMs: number;
}

/** The promise ttl to persist after answering one of `ttlMs`, or undefined when `persistedTtlMs` covers it. */
export function promiseAfter(persistedTtlMs: number, ttlMs: number): number | undefined {
  return ttlMs <= persistedTtlMs ? undefined : ttlMs;
}

/** What a fresh instance finds of a lease (generation-object.ts keeps the rows and the sockets). */
export interface LeaseEvidence {
  /** The deadline last written with the record (0: no lease). */
  storedDeadlineMs: number;
  promises: LeasePromises;
  /** The channels' last ping + ttl, when channels survived (hibernation keeps them; a restart does not). */
  liveChannelDeadlineMs: number | undefined;
  nowMs: number;
}

/** The restart rule's answer: the deadline to serve, and what to persist when it folded promises. */
export interface RestartFold {
  deadlineMs: number;
  /** The promises still unwritten after the fold (defined only when the row must be written). */
  write?: LeasePromises;
}

/**
 * The deadline a fresh instance serves, never earlier than any deadline an earlier instance
 * answered: every unwritten promise was made before now with a ttl at most its marker, so it
 * ends by now + that ttl (etcd's leader likewise extends every lease by its TTL when it takes
 * over). Surviving channels are their own exact evidence (their last ping + ttl). What the
 * fold used is written with the deadline and cleared, so a later restart cannot extend the
 * lease again by the same promises. 0 stays 0: no lease.
 */
export function deadlineAfterRestart(evidence: LeaseEvidence): RestartFold {
  const { storedDeadlineMs, promises, liveChannelDeadlineMs, nowMs } = evidence;
  if (storedDeadlineMs === 0) return { deadlineMs: 0 };
  const survived = liveChannelDeadlineMs !== undefined;
  const byHttp = promises.httpTtlMs > 0 ? nowMs + promises.httpTtlMs : 0;
  const byChannels = survived ? liveChannelDeadlineMs : promises.channelTtlMs > 0 ? nowMs + promises.channelTtlMs : 0;
  const deadlineMs = Math.max(storedDeadlineMs, byHttp, byChannels);
  const left = { httpTtlMs: 0, channelTtlMs: survived ? promises.channelTtlMs : 0 };
  const folded = left.httpTtlMs !== promises.httpTtlMs || left.channelTtlMs !== promises.channelTtlMs;
  return folded ? { deadlineMs, write: left } : { deadlineMs };
}
