/**
 * The wire response of a claim command: what the Durable Object returns, what an
 * operation-id replay returns byte for byte, and what the in-memory backend decodes.
 *
 * Guarantees: success is 200 `{"claim": ClaimRecord}`; a refusal is the error envelope with
 * the code's status, and `claim_held` carries the holder's record in `error.claim`.
 */
import { claimToWire } from "../protocol/claims.ts";
import { ERROR_STATUS, errorEnvelope } from "../protocol/errors.ts";
import type { WireResponse } from "../protocol/wire-response.ts";
import type { ClaimResult } from "./claim-machine.ts";

export function claimResultToResponse(result: ClaimResult): WireResponse {
  if (result.ok) return { status: 200, body: { claim: claimToWire(result.claim) } };
  const { code, message, details } = result.refusal;
  const extra = code === "claim_held" && result.claim !== undefined ? { claim: claimToWire(result.claim) } : {};
  return { status: ERROR_STATUS[code], body: errorEnvelope(code, message, { ...details, ...extra }) };
}
