/**
 * The generation state machine (docs/protocol.md#generations): the legal-transition table and the
 * register / patch decisions, as pure functions of (record, command, nowMs).
 *
 * Guarantees:
 * - {@link LEGAL_TRANSITIONS} is the only statement of which moves are legal; `retired` and
 *   `failed` are final (no move leaves them).
 * - Registering the same (id, service, instanceId) again returns the current record unchanged:
 *   it never resets the state, the start time or the reason. A different service or instance
 *   is refused with `generation_exists` (carrying the existing record).
 * - A patch to the current state is always legal (also in a final state, so a retried
 *   "retire" succeeds) and only updates `reason` and `updatedAtMs`.
 * - `updatedAtMs` never decreases, even if the clock steps back.
 * - The lease (core/generation-lease.ts): every command first applies the lease's lazy
 *   expiry; a keepalive starts or extends it (`invalid_state` on a final generation); a
 *   move to `retired` or `failed` and `lease/end` end it. A decision that ended an epoch
 *   says so (`leaseEnded`), once, for the object to deliver to the claims it bound.
 *
 * Does not: read the clock, touch storage or know about HTTP (the Durable Object and the
 * in-memory backend wrap these decisions). Claims never consult generations.
 */
import { ERROR_STATUS, errorEnvelope } from "../protocol/errors.ts";
import type { ErrorCode, ErrorEnvelope } from "../protocol/errors.ts";
import type { WireResponse } from "../protocol/wire-response.ts";
import type {
  GenerationRecord,
  GenerationRecordWire,
  GenerationState,
  PatchGenerationBody,
  RegisterGenerationBody,
} from "../protocol/generations.ts";
import { GENERATION_STATES, generationToWire } from "../protocol/generations.ts";
import { type LeaseEnd, type LeaseStep, endLease, expireLease, keepLease } from "./generation-lease.ts";

/** The reason of a freshly registered generation (the Go coordinator's `registered`). */
export const REGISTERED_REASON = "registered";

/**
 * docs/protocol.md#claims: for each state, the states it may move to. A state missing from its own list
 * is still allowed as a same-state patch (see {@link canTransition}).
 */
export const LEGAL_TRANSITIONS: Readonly<Record<GenerationState, readonly GenerationState[]>> = {
  joining: ["standby", "preparing", "failed", "retired"],
  standby: ["preparing", "active", "failed", "retired"],
  preparing: ["standby", "active", "failed", "retired"],
  active: ["draining", "transferring", "retired", "failed"],
  draining: ["transferring", "active", "retired", "failed"],
  transferring: ["retired", "active", "failed", "standby"],
  retired: [],
  failed: [],
};

/** True for `retired` and `failed`, which no move leaves. */
export function isFinalState(state: GenerationState): boolean {
  return LEGAL_TRANSITIONS[state].length === 0;
}

/** True when a patch from `from` to `to` is legal (the same state always is). */
export function canTransition(from: GenerationState, to: GenerationState): boolean {
  return from === to || LEGAL_TRANSITIONS[from].includes(to);
}

/** True for strings that are one of the eight states. */
export function isGenerationState(value: unknown): value is GenerationState {
  return typeof value === "string" && (GENERATION_STATES as readonly string[]).includes(value);
}

/** A refusal as data: a protocol error code, its message and the details rendered inside `error`. */
export interface GenerationRefusal {
  code: Extract<ErrorCode, "generation_exists" | "generation_not_found" | "invalid_state">;
  message: string;
  details: GenerationRefusalDetails;
}

/** What a refusal carries inside `error`: the existing record, or the refused move. */
export interface GenerationRefusalDetails {
  generation?: GenerationRecordWire;
  from?: GenerationState;
  to?: GenerationState;
}

/**
 * What a command decided. `next` is the record to persist when `changed` (the caller saves
 * it); `record` is what the caller answers with.
 */
export type GenerationDecision =
  | { ok: true; record: GenerationRecord; changed: boolean; created: boolean; leaseEnded?: LeaseEnd }
  | { ok: false; refusal: GenerationRefusal; leaseEnded?: LeaseEnd; record?: GenerationRecord };

const NOT_FOUND: GenerationDecision = {
  ok: false,
  refusal: { code: "generation_not_found", message: "generation not found", details: {} },
};

/**
 * Run `decide` on the record after its lease's lazy expiry: an expiry the command revealed is
 * kept (and reported) even when the command itself is refused, as claims do.
 */
function afterExpiry(
  existing: GenerationRecord | undefined,
  nowMs: number,
  decide: (record: GenerationRecord, expired: LeaseStep) => GenerationDecision,
): GenerationDecision {
  if (existing === undefined) return NOT_FOUND;
  const expired = expireLease(existing, nowMs);
  const decision = decide(expired.record, expired);
  if (expired.ended === undefined || decision.leaseEnded !== undefined) return decision;
  if (decision.ok) return { ...decision, changed: true, leaseEnded: expired.ended };
  return { ...decision, leaseEnded: expired.ended, record: expired.record };
}

/** A decision from a lease step on `before` (changed when the record did). */
function leaseDecision(before: GenerationRecord, step: LeaseStep): GenerationDecision {
  const changed = step.record !== before;
  return step.ended === undefined
    ? { ok: true, record: step.record, changed, created: false }
    : { ok: true, record: step.record, changed, created: false, leaseEnded: step.ended };
}

/** Read at `nowMs`: the record with its lease's lazy expiry applied (`generation_not_found` when absent). */
export function decideTouch(existing: GenerationRecord | undefined, nowMs: number): GenerationDecision {
  return afterExpiry(existing, nowMs, (record) => ({ ok: true, record, changed: false, created: false }));
}

/**
 * A keepalive of `ttlMs` (docs/protocol.md#sessions).
 *
 * 1. Absent: `generation_not_found`.
 * 2. `retired` or `failed`: `invalid_state`.
 * 3. A lease whose deadline passed ends (reason `expired`); then a live lease is extended to
 *    at least now + ttl, or a new epoch starts with deadline now + ttl.
 */
export function decideKeepalive(
  existing: GenerationRecord | undefined,
  ttlMs: number,
  nowMs: number,
): GenerationDecision {
  return afterExpiry(existing, nowMs, (record) => {
    if (isFinalState(record.state)) {
      return {
        ok: false,
        refusal: {
          code: "invalid_state",
          message: `a ${record.state} generation cannot hold a lease`,
          details: { from: record.state },
        },
      };
    }
    return leaseDecision(record, keepLease(record, ttlMs, nowMs));
  });
}

/** `lease/end`: the lease ends now, as if it expired (a generation without one: unchanged). */
export function decideEndLease(existing: GenerationRecord | undefined, nowMs: number): GenerationDecision {
  return afterExpiry(existing, nowMs, (record) => leaseDecision(record, endLease(record, "ended")));
}

/**
 * Register `req.id`.
 *
 * 1. Absent: create it in `joining`, started = updated = now, reason `registered`.
 * 2. Present with the same service and instance: the current record, unchanged.
 * 3. Present with another service or instance: `generation_exists`.
 *
 * @param existing the stored record of `req.id`, if any
 * @param nowMs the object's clock, epoch milliseconds
 */
export function decideRegister(
  existing: GenerationRecord | undefined,
  req: RegisterGenerationBody,
  nowMs: number,
): GenerationDecision {
  if (existing === undefined) {
    const record: GenerationRecord = {
      id: req.id,
      service: req.service,
      instanceId: req.instanceId,
      state: "joining",
      startedAtMs: nowMs,
      updatedAtMs: nowMs,
      reason: REGISTERED_REASON,
      leaseExpiresAtMs: 0,
      leaseEpoch: 0n,
    };
    return { ok: true, record, changed: true, created: true };
  }
  if (existing.service !== req.service || existing.instanceId !== req.instanceId) {
    return {
      ok: false,
      refusal: {
        code: "generation_exists",
        message: `generation ${JSON.stringify(req.id)} is registered by another service or instance`,
        details: { generation: generationToWire(existing) },
      },
    };
  }
  return { ok: true, record: existing, changed: false, created: false };
}

/**
 * Move a generation to `req.state`.
 *
 * 1. Absent: `generation_not_found` (a patch never creates).
 * 2. Same state: reason = `req.reason` when given (else kept), updated = now.
 * 3. Legal move: state = `req.state`, reason = `req.reason ?? ""`, updated = now.
 * 4. Anything else: `invalid_state` with `from` and `to`.
 * A move to `retired` or `failed` ends the lease (its claims expire).
 *
 * @param nowMs the object's clock, epoch milliseconds
 */
export function decidePatch(
  existing: GenerationRecord | undefined,
  req: PatchGenerationBody,
  nowMs: number,
): GenerationDecision {
  return afterExpiry(existing, nowMs, (record) => patch(record, req, nowMs));
}

function patch(existing: GenerationRecord, req: PatchGenerationBody, nowMs: number): GenerationDecision {
  const from = existing.state;
  const to = req.state;
  if (!canTransition(from, to)) {
    const why = isFinalState(from) ? `${from} is final` : `${from} may move to ${LEGAL_TRANSITIONS[from].join(", ")}`;
    return {
      ok: false,
      refusal: {
        code: "invalid_state",
        message: `illegal transition ${from} -> ${to} (${why})`,
        details: { from, to },
      },
    };
  }
  // A move without a reason must not keep the previous move's reason: it would describe the wrong transition.
  const reason = from === to ? (req.reason ?? existing.reason) : (req.reason ?? "");
  const moved: GenerationRecord = {
    ...existing,
    state: to,
    reason,
    updatedAtMs: Math.max(existing.updatedAtMs, nowMs),
  };
  const ended = isFinalState(to) ? endLease(moved, to === "retired" ? "retired" : "failed") : { record: moved };
  return ended.ended === undefined
    ? { ok: true, record: ended.record, changed: true, created: false }
    : { ok: true, record: ended.record, changed: true, created: false, leaseEnded: ended.ended };
}

/** A generation's wire response, its error details typed precisely (they cross Durable Object RPC). */
export type GenerationWireResponse = WireResponse<
  { generation: GenerationRecordWire } | ErrorEnvelope<GenerationRefusalDetails>
>;

/**
 * Render a decision for the wire: `{"generation": record}` with 200, or the error envelope.
 * Registration answers 200 both on creation and on a repeat (the protocol names no 201 for it).
 */
export function generationDecisionToResponse(decision: GenerationDecision): GenerationWireResponse {
  if (decision.ok) return { status: 200, body: { generation: generationToWire(decision.record) } };
  const { code, message, details } = decision.refusal;
  return { status: ERROR_STATUS[code], body: errorEnvelope(code, message, details) };
}
