/**
 * Decoding of claim and generation responses: the one place the client turns a wire
 * answer (status + JSON body) into a record or a {@link ShiftlockError}.
 *
 * Guarantees: the HTTP backend and the in-memory backend both go through these functions,
 * so a replayed operation, a refusal or a success looks identical from either. Counters
 * become `bigint`; a `claim_held` error's `details.claim` is decoded to a `ClaimRecord`
 * too. A body that is not the documented shape rejects with code `internal` (a server or
 * proxy bug, never the caller's fault).
 *
 * Does not: validate records strictly — unknown extra fields from a newer server are
 * ignored, so older clients keep working.
 */
import type { ClaimRecord } from "../../protocol/claims.ts";
import { parseCounter } from "../../protocol/counter.ts";
import { ShiftlockError } from "../../protocol/errors.ts";
import type { GenerationRecord } from "../../protocol/generations.ts";

/** A response as plain data (same shape as the server's `WireResponse`). */
export interface WireAnswer {
  status: number;
  body: unknown;
}

const malformed = (what: string): ShiftlockError => new ShiftlockError("internal", `malformed response: ${what}`);

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === "object" && !Array.isArray(v);
}

function counter(obj: Record<string, unknown>, key: string): bigint {
  const v = obj[key];
  const parsed = typeof v === "string" ? parseCounter(v) : undefined;
  if (parsed === undefined) throw malformed(`${key} is not a counter`);
  return parsed;
}

function str(obj: Record<string, unknown>, key: string): string {
  const v = obj[key];
  if (typeof v !== "string") throw malformed(`${key} is not a string`);
  return v;
}

function num(obj: Record<string, unknown>, key: string): number {
  const v = obj[key];
  if (typeof v !== "number" || !Number.isFinite(v)) throw malformed(`${key} is not a number`);
  return v;
}

/** Decode a wire `ClaimRecord` (counters as decimal strings) to the code form. */
export function decodeClaim(wire: unknown): ClaimRecord {
  if (!isObject(wire)) throw malformed("claim is not an object");
  return {
    name: str(wire, "name"),
    ownerGeneration: str(wire, "ownerGeneration"),
    fencingToken: counter(wire, "fencingToken"),
    phase: str(wire, "phase") as ClaimRecord["phase"],
    acquiredAtMs: num(wire, "acquiredAtMs"),
    expiresAtMs: num(wire, "expiresAtMs"),
    previousOwner: str(wire, "previousOwner"),
    pendingSuccessor: str(wire, "pendingSuccessor"),
    drainStatus: str(wire, "drainStatus") as ClaimRecord["drainStatus"],
    transferStatus: str(wire, "transferStatus") as ClaimRecord["transferStatus"],
    lastHeartbeatMs: num(wire, "lastHeartbeatMs"),
    reason: str(wire, "reason") as ClaimRecord["reason"],
    version: counter(wire, "version"),
  };
}

/** Decode a wire generation record. */
export function decodeGeneration(wire: unknown): GenerationRecord {
  if (!isObject(wire)) throw malformed("generation is not an object");
  return {
    id: str(wire, "id"),
    service: str(wire, "service"),
    instanceId: str(wire, "instanceId"),
    state: str(wire, "state") as GenerationRecord["state"],
    startedAtMs: num(wire, "startedAtMs"),
    updatedAtMs: num(wire, "updatedAtMs"),
    reason: str(wire, "reason"),
  };
}

/**
 * The error of a non-2xx answer. `claim_held` carries the holder's record in
 * `details.claim`, decoded to a `ClaimRecord` (left as sent if it does not decode).
 */
export function errorFromAnswer(answer: WireAnswer): ShiftlockError {
  const error = ShiftlockError.fromEnvelope(answer.body, answer.status);
  return withDecodedClaim(error);
}

/** Decode `details.claim` of a rebuilt error in place (HTTP and memory alike). */
export function withDecodedClaim(error: ShiftlockError): ShiftlockError {
  const claim = error.details["claim"];
  if (isObject(claim)) {
    try {
      error.details["claim"] = decodeClaim(claim);
    } catch {
      // Keep the raw value: the code and message are what callers rely on.
    }
  }
  return error;
}

/** `{"claim": …}` → ClaimRecord, or throw the answer's error. */
export function decodeClaimAnswer(answer: WireAnswer): ClaimRecord {
  if (answer.status < 200 || answer.status >= 300) throw errorFromAnswer(answer);
  if (!isObject(answer.body)) throw malformed("body is not an object");
  return decodeClaim(answer.body["claim"]);
}

/** `{"generation": …}` → GenerationRecord, or throw the answer's error. */
export function decodeGenerationAnswer(answer: WireAnswer): GenerationRecord {
  if (answer.status < 200 || answer.status >= 300) throw errorFromAnswer(answer);
  if (!isObject(answer.body)) throw malformed("body is not an object");
  return decodeGeneration(answer.body["generation"]);
}
