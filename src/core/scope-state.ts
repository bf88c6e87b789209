/**
 * A coord scope's state as the machine (scope-machine.ts) keeps it, and the views of it that
 * answers and alarms need: the public lease, the snapshot, the capability, the holder named
 * by a `lease_held` refusal, and when the alarm must run.
 *
 * Guarantees: pure functions of the state; no I/O, no clock.
 */
import {
  COORD_BACKEND,
  type CoordCapability,
  type CoordLease,
  type CoordSnapshot,
  type ScopeId,
  isKeyedScope,
} from "../protocol/coord.ts";
import type { ErrorDetails } from "../protocol/errors.ts";

/** The holder's lease plus the ttl keepalive reuses when it gives none. */
export interface HeldLease extends CoordLease {
  /** Lease duration (ms) the next keepalive without `ttlMs` applies. */
  ttlMs: number;
  /** The queue entry this grant came from, "" for an immediate grant. */
  waiterId: string;
}

/** One queued acquire, waiting for its turn. */
export interface Waiter {
  waiterId: string;
  /** The lease id the grant will carry. */
  leaseId: string;
  participantId: string;
  ttlMs: number;
  /** Epoch ms at which the caller stops waiting (enqueue time + waitMs). */
  deadlineMs: number;
}

/** Everything the machine knows about one scope. */
export interface ScopeState {
  scope: ScopeId;
  /** The last epoch granted (0 = never granted). */
  epoch: bigint;
  generation: bigint;
  /** The last published root, `null` until one is published. */
  root: unknown;
  /** Base64 of the last published key prefix, "" when none. */
  lastKeyPrefix: string;
  holder: HeldLease | null;
  waiters: Waiter[];
}

/** A scope never seen before: epoch 0, generation 0, no root, free. */
export function emptyScopeState(scope: ScopeId): ScopeState {
  return { scope, epoch: 0n, generation: 0n, root: null, lastKeyPrefix: "", holder: null, waiters: [] };
}

/** The public part of a held lease. */
export function publicLease(held: HeldLease): CoordLease {
  return {
    leaseId: held.leaseId,
    epoch: held.epoch,
    participantId: held.participantId,
    expiresAtMs: held.expiresAtMs,
  };
}

/** When the alarm must next run, or undefined when nothing can expire. */
export function nextDeadlineMs(state: ScopeState): number | undefined {
  // Expiry is strict (`now > expiresAtMs`), so the earliest instant it applies is +1 ms.
  let deadline = state.holder === null ? undefined : state.holder.expiresAtMs + 1;
  for (const waiter of state.waiters) {
    if (deadline === undefined || waiter.deadlineMs < deadline) deadline = waiter.deadlineMs;
  }
  return deadline;
}

export function scopeSnapshot(state: ScopeState): CoordSnapshot {
  return {
    volumeId: state.scope.volumeId,
    objectStoreId: state.scope.objectStoreId,
    generation: state.generation,
    root: state.root,
  };
}

export function scopeCapability(state: ScopeState): CoordCapability {
  const keyed = isKeyedScope(state.scope);
  return {
    supported: true,
    backend: COORD_BACKEND,
    volumeId: state.scope.volumeId,
    objectStoreId: state.scope.objectStoreId,
    generation: keyed ? 0n : state.generation,
    generations: !keyed,
    detectsLoss: true,
    fallbackReason: "",
  };
}

/**
 * What a `lease_held` refusal carries: `holder`, the participant holding the lease at that
 * instant (absent when nobody does, e.g. a queued caller whose wait ran out as it was freed).
 */
export function leaseHeldDetails(state: ScopeState): ErrorDetails {
  return state.holder === null ? {} : { holder: state.holder.participantId };
}
