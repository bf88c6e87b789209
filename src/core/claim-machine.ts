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

/** True when the held claim's lease has run out at `nowMs` (strictly after the deadline). */
export function isExpired(record: ClaimRecord, nowMs: number): boolean {
  return isHeld(record.phase) && record.expiresAtMs !== 0 && nowMs > record.expiresAtMs;
}

/** The deadline the alarm must fire for, or undefined when nothing can expire. */
export function nextDeadlineMs(record: ClaimRecord | undefined): number | undefined {
  if (record === undefined || !isHeld(record.phase) || record.expiresAtMs === 0) return undefined;
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
  };
}

const refuse = (code: ErrorCode, message?: string, details?: ErrorDetails): ClaimRefusal => ({
  code,
  ...(message === undefined ? {} : { message }),
  ...(details === undefined ? {} : { details }),
});

/**
 * Decide one command. `name` is the claim's name (used only when the claim is created).
 */
export function decideClaim(
  name: string,
  current: ClaimRecord | undefined,
  command: ClaimCommand,
  nowMs: number,
): ClaimStep {
  const events: ClaimEvent[] = [];
  let record = current;
  let changed = false;

  // 1. Lazy expiry: its own persisted change and event, before the command is judged.
  if (record !== undefined && isExpired(record, nowMs)) {
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

  if (command.kind === "expire")
    return record === undefined ? fail(refuse("claim_not_found")) : done({ ok: true, claim: record });
  if (command.kind === "acquire") return acquire(record ?? emptyClaim(name), command, nowMs, apply, fail, done);
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
      return apply(
        {
          phase: "reserved",
          pendingSuccessor: command.toGeneration,
          transferStatus: "prepared",
          drainStatus: "complete",
          expiresAtMs: nowMs + command.ttlMs,
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
          expiresAtMs: nowMs + command.ttlMs,
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
  };
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
  apply: (patch: Partial<ClaimRecord>, event?: ClaimEventReason, tokenAdvanced?: boolean) => ClaimStep,
  fail: (refusal: ClaimRefusal) => ClaimStep,
  done: (result: ClaimResult) => ClaimStep,
): ClaimStep {
  if (isHeld(claim.phase)) {
    if (claim.ownerGeneration !== command.generationId || command.allowEmptyOnly === true) {
      return fail(refuse("claim_held"));
    }
    // Same owner: an extension that never shortens the lease (docs/protocol.md: reason `renewed`).
    const expiresAtMs = Math.max(claim.expiresAtMs, nowMs + command.ttlMs);
    // Nothing would change (same deadline, heartbeat and reason): not a persisted change, so
    // no version bump (docs/protocol.md: version +1 on every persisted change).
    if (expiresAtMs === claim.expiresAtMs && claim.reason === "renewed" && claim.lastHeartbeatMs === nowMs) {
      return done({ ok: true, claim });
    }
    return apply({ expiresAtMs, lastHeartbeatMs: nowMs, reason: "renewed" });
  }
  if (claim.fencingToken >= MAX_FENCING_TOKEN) return fail(refuse("token_overflow"));
  return apply(
    {
      fencingToken: claim.fencingToken + 1n,
      ownerGeneration: command.generationId,
      phase: "owned",
      acquiredAtMs: nowMs,
      lastHeartbeatMs: nowMs,
      expiresAtMs: nowMs + command.ttlMs,
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
