/**
 * The claims state machine (docs/protocol.md#claims): a pure function of (record, command, nowMs).
 *
 * Guarantees:
 * - No I/O and no clock: the same function decides in the Durable Object and in the
 *   client's in-memory backend, so both obey one rule set.
 * - Rules are checked in the protocol's order; expected refusals (held, stale token, …) are
 *   values, never throws.
 * - The fencing token changes only on acquire of an unowned claim and on commit, by +1,
 *   and never past {@link MAX_FENCING_TOKEN}. Every persisted change bumps `version` by 1
 *   and every published event carries the version of the change that caused it.
 * - Expiry (`now > expiresAtMs` on a held claim) is applied first on every command, as its
 *   own change with its own `expired` event, so watchers see it even when the command that
 *   revealed it then fails.
 * - Bound claims (docs/protocol.md#sessions, core/claim-leases.ts) follow their owner's
 *   lease epoch instead of a deadline of their own: they expire when a view or the
 *   generation's delivery says the epoch ended, never by the clock; a bound acquire, prepare
 *   or commit needs a live view of the generation it binds to (else `no_lease`); a renew of
 *   a bound claim changes nothing.
 * - Eviction (an operator's) ends the hold like a release, with reason `evicted`. The evicted
 *   owner's token stays recognisable without storing anything more: while the claim is
 *   unowned with reason `evicted`, the token it still carries is exactly the evicted owner's,
 *   so a command presenting it is refused `evicted` before any other ownership check; the
 *   next acquire advances the token and changes the reason, which ends that.
 *
 * Does not: persist, deduplicate operation ids (see operations.ts) or know about HTTP.
 */
import type { ClaimEventReason, ClaimPhase, ClaimRecord } from "../protocol/claims.ts";
import { MAX_FENCING_TOKEN } from "../protocol/counter.ts";
import type { ErrorCode, ErrorDetails } from "../protocol/errors.ts";

import type { ClaimCommand } from "./claim-command.ts";
import { type LeaseView, type LeaseViews, NO_LEASE_VIEWS, boundEpochEnded } from "./claim-leases.ts";

export type { ClaimCommand };

/** A change published to watchers. `claim.version` orders events. */
export interface ClaimEvent {
  reason: ClaimEventReason;
  claim: ClaimRecord;
  timeMs: number;
  /** `evicted` events: the operator's note, when one was given. */
  note?: string;
}

/** An expected refusal, carried as a value. */
export interface ClaimRefusal {
  code: ErrorCode;
  message?: string;
  details?: ErrorDetails;
}

export type ClaimResult = { ok: true; claim: ClaimRecord } | { ok: false; refusal: ClaimRefusal; claim?: ClaimRecord };

export interface ClaimStep {
  /** The record to persist, or undefined when the claim still does not exist. */
  next: ClaimRecord | undefined;
  /** True when `next` differs from the input and must be saved (version bumped). */
  changed: boolean;
  /** True when this step advanced the fencing token (stores guard the update on it). */
  tokenAdvanced: boolean;
  /** Events to publish after the save, in version order. */
  events: ClaimEvent[];
  result: ClaimResult;
}

/** Phases in which a claim has an owner and an expiry. */
export function isHeld(phase: ClaimPhase): boolean {
  return phase !== "unowned";
}

/**
 * True when the held claim's hold has run out at `nowMs`: strictly after its own deadline, or,
 * for a bound claim, when `views` say its epoch ended (its learned deadline alone never does).
 */
export function isExpired(record: ClaimRecord, nowMs: number, views: LeaseViews = NO_LEASE_VIEWS): boolean {
  if (!isHeld(record.phase)) return false;
  if (record.bound) return boundEpochEnded(record, views);
  return record.expiresAtMs !== 0 && nowMs > record.expiresAtMs;
}

/**
 * The deadline the alarm must fire for, or undefined when nothing can expire by the clock (a
 * bound claim: its generation delivers the end of its epoch).
 */
export function nextDeadlineMs(record: ClaimRecord | undefined): number | undefined {
  if (record === undefined || !isHeld(record.phase) || record.bound || record.expiresAtMs === 0) return undefined;
  // Expiry is strict (`now > expiresAtMs`), so the earliest instant it applies is +1 ms.
  return record.expiresAtMs + 1;
}

/**
 * True when `token` is the one an operator evicted and nobody has acquired the claim since
 * (docs/protocol.md#eviction): an eviction leaves the claim unowned with reason `evicted`
 * and its token unchanged, and only an acquire moves either.
 */
export function isEvictedToken(record: ClaimRecord, token: bigint): boolean {
  return record.phase === "unowned" && record.reason === "evicted" && record.fencingToken === token;
}

/** A brand-new, never-owned claim (token 0, version 0). */
export function emptyClaim(name: string): ClaimRecord {
  return {
    name,
    ownerGeneration: "",
    fencingToken: 0n,
    phase: "unowned",
    acquiredAtMs: 0,
    expiresAtMs: 0,
    previousOwner: "",
    pendingSuccessor: "",
    drainStatus: "",
    transferStatus: "",
    lastHeartbeatMs: 0,
    reason: "",
    version: 0n,
    bound: false,
    leaseEpoch: 0n,
  };
}

const refuse = (code: ErrorCode, message?: string, details?: ErrorDetails): ClaimRefusal => ({
  code,
  ...(message === undefined ? {} : { message }),
  ...(details === undefined ? {} : { details }),
});

/**
 * Decide one command. `name` is the claim's name (used only when the claim is created);
 * `views` are the leases the command needed (core/claim-leases.ts `leasesWanted`), as their
 * generations answered them.
 */
export function decideClaim(
  name: string,
  current: ClaimRecord | undefined,
  command: ClaimCommand,
  nowMs: number,
  views: LeaseViews = NO_LEASE_VIEWS,
): ClaimStep {
  const events: ClaimEvent[] = [];
  let record = current;
  let changed = false;

  // 1. Lazy expiry: its own persisted change and event, before the command is judged.
  const leaseEnded =
    command.kind === "lease_ended" &&
    record !== undefined &&
    record.bound &&
    isHeld(record.phase) &&
    record.ownerGeneration === command.generationId &&
    record.leaseEpoch <= command.epoch;
  if (record !== undefined && (leaseEnded || isExpired(record, nowMs, views))) {
    record = { ...record, ...endOfHold(record, "expired"), version: record.version + 1n };
    changed = true;
    events.push({ reason: "expired", claim: record, timeMs: nowMs });
  }

  const done = (result: ClaimResult, tokenAdvanced = false): ClaimStep => ({
    next: record,
    changed,
    tokenAdvanced,
    events,
    result,
  });
  const fail = (refusal: ClaimRefusal): ClaimStep =>
    done({ ok: false, refusal, ...(record === undefined ? {} : { claim: record }) });
  /** Apply a change: bump the version, optionally publish it. */
  const apply = (
    patch: Partial<ClaimRecord>,
    event?: ClaimEventReason,
    tokenAdvanced = false,
    note?: string,
  ): ClaimStep => {
    const base = record ?? emptyClaim(name);
    record = { ...base, ...patch, version: base.version + 1n };
    changed = true;
    if (event !== undefined)
      events.push({ reason: event, claim: record, timeMs: nowMs, ...(note === undefined ? {} : { note }) });
    return done({ ok: true, claim: record }, tokenAdvanced);
  };

  if (command.kind === "expire" || command.kind === "lease_ended")
    return record === undefined ? fail(refuse("claim_not_found")) : done({ ok: true, claim: record });
  if (command.kind === "acquire")
    return acquire(record ?? emptyClaim(name), command, nowMs, views.get(command.generationId), apply, fail, done);
  // 2. Every other command needs an existing claim; reading never creates one.
  if (record === undefined) return fail(refuse("claim_not_found"));
  const claim = record;
  // 3. A token an operator evicted is refused as such before any other ownership check.
  const presented = presentedToken(command);
  if (presented !== undefined && isEvictedToken(claim, presented)) {
    return fail(refuse("evicted", `an operator evicted the owner of token ${presented}: acquire the claim again`));
  }

  switch (command.kind) {
    case "get":
      return done({ ok: true, claim });

    case "renew":
      if (claim.ownerGeneration !== command.generationId || !isHeld(claim.phase)) return fail(refuse("not_owner"));
      if (claim.fencingToken !== command.token) return fail(refuse("stale_token"));
      // A bound claim is kept by its generation's lease: its renew answers without a change.
      if (claim.bound) return done({ ok: true, claim });
      return apply({ expiresAtMs: nowMs + command.ttlMs, lastHeartbeatMs: nowMs, reason: "renewed" });

    case "prepare": {
      if (!isHeld(claim.phase) || claim.ownerGeneration !== command.fromGeneration) return fail(refuse("not_owner"));
      if (claim.fencingToken !== command.token) return fail(refuse("stale_token"));
      if (command.toGeneration === "" || command.toGeneration === command.fromGeneration) {
        return fail(
          refuse("invalid_request", "toGeneration must be set and differ from fromGeneration", {
            field: "toGeneration",
          }),
        );
      }
      if (claim.phase === "reserved") {
        if (claim.pendingSuccessor !== command.toGeneration) return fail(refuse("concurrent_transfer"));
        return done({ ok: true, claim });
      }
      if (command.bound === true && views.get(command.toGeneration)?.live !== true)
        return fail(noLease(command.toGeneration));
      return apply(
        {
          phase: "reserved",
          pendingSuccessor: command.toGeneration,
          transferStatus: "prepared",
          drainStatus: "complete",
          // A bound claim keeps its owner's binding until the commit; an unbound one gets the reservation's ttl.
          expiresAtMs: claim.bound || command.ttlMs === undefined ? claim.expiresAtMs : nowMs + command.ttlMs,
          reason: "transfer_prepared",
        },
        "transfer_prepared",
      );
    }

    case "commit": {
      const alreadyCommitted =
        claim.ownerGeneration === command.toGeneration &&
        claim.fencingToken === command.expectedToken + 1n &&
        claim.transferStatus === "committed";
      if (alreadyCommitted) return done({ ok: true, claim });
      if (claim.phase !== "reserved") return fail(refuse("no_transfer"));
      if (claim.ownerGeneration !== command.fromGeneration || claim.pendingSuccessor !== command.toGeneration) {
        return fail(refuse("concurrent_transfer"));
      }
      if (claim.fencingToken !== command.expectedToken) return fail(refuse("stale_token"));
      if (claim.fencingToken >= MAX_FENCING_TOKEN) return fail(refuse("token_overflow"));
      const hold = holdTerms(command, views.get(command.toGeneration), nowMs);
      if (hold === undefined) return fail(noLease(command.toGeneration));
      return apply(
        {
          ownerGeneration: command.toGeneration,
          fencingToken: claim.fencingToken + 1n,
          previousOwner: command.fromGeneration,
          pendingSuccessor: "",
          phase: "owned",
          transferStatus: "committed",
          acquiredAtMs: nowMs,
          lastHeartbeatMs: nowMs,
          ...hold,
          reason: "transfer_committed",
        },
        "transfer_committed",
        true,
      );
    }

    case "abort":
      if (claim.phase !== "reserved") {
        if (isHeld(claim.phase) && claim.ownerGeneration === command.fromGeneration) return done({ ok: true, claim });
        return fail(refuse("no_transfer"));
      }
      if (claim.fencingToken !== command.expectedToken) return fail(refuse("stale_token"));
      if (claim.ownerGeneration !== command.fromGeneration) return fail(refuse("not_owner"));
      return apply(
        { pendingSuccessor: "", phase: "owned", transferStatus: "aborted", reason: "transfer_aborted" },
        "transfer_aborted",
      );

    case "release":
      if (claim.fencingToken !== command.token) return fail(refuse("stale_token"));
      if (!isHeld(claim.phase) && claim.previousOwner === command.generationId) return done({ ok: true, claim });
      if (!isHeld(claim.phase) || claim.ownerGeneration !== command.generationId) return fail(refuse("not_owner"));
      return apply(endOfHold(claim, "released"), "released");

    case "evict": {
      if (!isHeld(claim.phase)) return done({ ok: true, claim });
      return apply(endOfHold(claim, "evicted"), "evicted", false, command.note);
    }
  }
}

/**
 * What ends a hold — expiry, release, eviction alike: the claim becomes unowned, remembers
 * its owner as `previousOwner`, drops any transfer, and keeps its token (only an acquire or
 * a commit advances it).
 */
function endOfHold(claim: ClaimRecord, reason: "expired" | "released" | "evicted"): Partial<ClaimRecord> {
  return {
    previousOwner: claim.ownerGeneration,
    ownerGeneration: "",
    phase: "unowned",
    pendingSuccessor: "",
    transferStatus: "",
    drainStatus: "",
    reason,
    bound: false,
    leaseEpoch: 0n,
  };
}

/** The refusal of a bound acquire, prepare or commit whose generation holds no live lease. */
function noLease(generationId: string): ClaimRefusal {
  return refuse("no_lease", `generation ${JSON.stringify(generationId)} holds no live lease`);
}

/**
 * How a new hold is kept: bound to the generation's live epoch (its deadline the one the claim
 * learns), or by the command's own ttl. Undefined for a bound command without a live lease.
 */
function holdTerms(
  command: { bound?: boolean | undefined; ttlMs?: number | undefined },
  view: LeaseView | undefined,
  nowMs: number,
): Pick<ClaimRecord, "bound" | "leaseEpoch" | "expiresAtMs"> | undefined {
  if (command.bound === true) {
    return view?.live === true ? { bound: true, leaseEpoch: view.epoch, expiresAtMs: view.expiresAtMs } : undefined;
  }
  return { bound: false, leaseEpoch: 0n, expiresAtMs: nowMs + (command.ttlMs ?? 0) };
}

/** The fencing token a command presents as its caller's, if it presents one. */
function presentedToken(command: ClaimCommand): bigint | undefined {
  switch (command.kind) {
    case "renew":
    case "prepare":
    case "release":
      return command.token;
    case "commit":
    case "abort":
      return command.expectedToken;
    default:
      return undefined;
  }
}

function acquire(
  claim: ClaimRecord,
  command: Extract<ClaimCommand, { kind: "acquire" }>,
  nowMs: number,
  view: LeaseView | undefined,
  apply: (patch: Partial<ClaimRecord>, event?: ClaimEventReason, tokenAdvanced?: boolean) => ClaimStep,
  fail: (refusal: ClaimRefusal) => ClaimStep,
  done: (result: ClaimResult) => ClaimStep,
): ClaimStep {
  const hold = holdTerms(command, view, nowMs);
  if (isHeld(claim.phase)) {
    if (claim.ownerGeneration !== command.generationId || command.allowEmptyOnly === true) {
      return fail(refuse("claim_held"));
    }
    if (hold === undefined) return fail(noLease(command.generationId));
    if (hold.bound) {
      // Bound to the live epoch already: nothing changes. Otherwise (unbound) it binds to it; an
      // earlier epoch of its own would have expired the claim above (its view names another epoch).
      if (claim.bound) return done({ ok: true, claim });
      return apply({ ...hold, lastHeartbeatMs: nowMs, reason: "renewed" });
    }
    // Same owner: an extension that never shortens the lease (docs/protocol.md: reason `renewed`);
    // a bound claim becomes unbound, kept by this ttl again.
    const expiresAtMs = claim.bound ? hold.expiresAtMs : Math.max(claim.expiresAtMs, hold.expiresAtMs);
    // Nothing would change (same deadline, heartbeat and reason): not a persisted change, so
    // no version bump (docs/protocol.md: version +1 on every persisted change).
    if (
      !claim.bound &&
      expiresAtMs === claim.expiresAtMs &&
      claim.reason === "renewed" &&
      claim.lastHeartbeatMs === nowMs
    ) {
      return done({ ok: true, claim });
    }
    return apply({ expiresAtMs, bound: false, leaseEpoch: 0n, lastHeartbeatMs: nowMs, reason: "renewed" });
  }
  if (hold === undefined) return fail(noLease(command.generationId));
  if (claim.fencingToken >= MAX_FENCING_TOKEN) return fail(refuse("token_overflow"));
  return apply(
    {
      fencingToken: claim.fencingToken + 1n,
      ownerGeneration: command.generationId,
      phase: "owned",
      acquiredAtMs: nowMs,
      lastHeartbeatMs: nowMs,
      ...hold,
      // previousOwner stays: it already names the last owner (set by release/expiry/commit).
      pendingSuccessor: "",
      transferStatus: "",
      drainStatus: "",
      reason: "acquired",
    },
    "acquired",
    true,
  );
}
