/**
 * The wire response of a coord command (route table of docs/protocol.md#coord), as plain data the Durable
 * Object returns over RPC and the in-memory coordinator can decode the same way.
 *
 * Guarantees: grants are 201 `{lease}`; keepalive 200 `{lease, wantLock}`; snapshot,
 * refresh and publish 200 with the snapshot; capability 200; release 204 with no body
 * whatever the lease's state; refusals are the error envelope with the code's status.
 */
import type { WireResponse } from "../protocol/wire-response.ts";
import { acquireResponseSchema, capabilitySchema, keepaliveResponseSchema, snapshotSchema } from "../protocol/coord.ts";
import { ERROR_STATUS, errorEnvelope, type ErrorDetails } from "../protocol/errors.ts";
import type { ScopeResult } from "./scope-machine.ts";

export function scopeResultToResponse(result: ScopeResult): WireResponse {
  if (!result.ok) {
    const { code, message, details } = result.refusal;
    return { status: ERROR_STATUS[code], body: errorEnvelope(code, message, details) };
  }
  switch (result.kind) {
    case "granted":
      return { status: 201, body: acquireResponseSchema.encode({ lease: result.lease }) };
    case "keepalive":
      return { status: 200, body: keepaliveResponseSchema.encode({ lease: result.lease, wantLock: result.wantLock }) };
    case "snapshot":
      return { status: 200, body: snapshotSchema.encode(result.snapshot) };
    case "capability":
      return { status: 200, body: capabilitySchema.encode(result.capability) };
    case "released":
    case "cancelled":
    case "none":
      return { status: 204, body: null };
    case "queued":
      // Never answered directly: the object holds the request until grant or timeout.
      return { status: 500, body: errorEnvelope("internal", "queued acquire answered early") };
  }
}

/**
 * The answer to a waiter whose `waitMs` passed (`details`: the machine's
 * `leaseHeldDetails`, naming the holder) or whose caller left.
 */
export function leaseHeldResponse(message: string, details: ErrorDetails = {}): WireResponse {
  return { status: ERROR_STATUS.lease_held, body: errorEnvelope("lease_held", message, details) };
}
