/**
 * The wire response of a claim command: what the Durable Object returns, what an
 * operation-id replay returns byte for byte, and what the in-memory backend decodes.
 *
 * Guarantees: success is 200 `{"claim": ClaimRecord}`; a refusal is the error envelope with
 * the code's status; `claim_held` (the holder's record) and `evicted` (the record now) carry
 * it in `error.claim`.
 */
import { claimToWire } from "../protocol/claims.ts";
import { ERROR_STATUS, errorEnvelope } from "../protocol/errors.ts";
import type { WireResponse } from "../protocol/wire-response.ts";
import type { ClaimResult } from "./claim-machine.ts";

export function claimResultToResponse(result: ClaimResult): WireResponse {
  if (result.ok) return { status: 200, body: { claim: claimToWire(result.claim) } };
  const { code, message, details } = result.refusal;
  // `claim_held` and `evicted` carry the record (docs/protocol.md#errors).
  const withRecord = code === "claim_held" || code === "evicted";
  const extra = withRecord && result.claim !== undefined ? { claim: claimToWire(result.claim) } : {};
  return { status: ERROR_STATUS[code], body: errorEnvelope(code, message, { ...details, ...extra }) };
}
