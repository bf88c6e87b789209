/**
 * Claims on the wire (SPEC §3): the record, the request bodies and the watch messages.
 *
 * Guarantees: one zod schema per body, used by the router to validate, by OpenAPI to
 * describe, and by the client's types; counters are `bigint` in code and decimal strings on
 * the wire ({@link claimToWire} / {@link claimFromWire} are the only conversions).
 */
import { z } from "zod";
import { counterOut, counterSchema, formatCounter } from "./counter.ts";
import { epochMsSchema, ttlMsSchema } from "./fields.ts";
import { nameSchema } from "./names.ts";

export const CLAIM_PHASES = ["unowned", "owned", "reserved", "draining"] as const;
export type ClaimPhase = (typeof CLAIM_PHASES)[number];

/** Why the record last changed. Events carry one of the event reasons. */
export const CLAIM_REASONS = [
  "",
  "acquired",
  "renewed",
  "transfer_prepared",
  "transfer_committed",
  "transfer_aborted",
  "released",
  "expired",
] as const;
export type ClaimReason = (typeof CLAIM_REASONS)[number];

/** Reasons that are published to watchers (renewals are not events). */
export const CLAIM_EVENT_REASONS = [
  "acquired",
  "transfer_prepared",
  "transfer_committed",
  "transfer_aborted",
  "released",
  "expired",
] as const;
export type ClaimEventReason = (typeof CLAIM_EVENT_REASONS)[number];

/** The claim record as code sees it (counters as bigint). */
export interface ClaimRecord {
  name: string;
  ownerGeneration: string;
  fencingToken: bigint;
  phase: ClaimPhase;
  acquiredAtMs: number;
  expiresAtMs: number;
  previousOwner: string;
  pendingSuccessor: string;
  drainStatus: "" | "complete";
  transferStatus: "" | "prepared" | "committed" | "aborted";
  lastHeartbeatMs: number;
  reason: ClaimReason;
  version: bigint;
}

/** The claim record on the wire. */
export const claimRecordWireSchema = z.strictObject({
  name: z.string(),
  ownerGeneration: z.string(),
  fencingToken: counterOut,
  phase: z.enum(CLAIM_PHASES),
  acquiredAtMs: epochMsSchema,
  expiresAtMs: epochMsSchema,
  previousOwner: z.string(),
  pendingSuccessor: z.string(),
  drainStatus: z.enum(["", "complete"]),
  transferStatus: z.enum(["", "prepared", "committed", "aborted"]),
  lastHeartbeatMs: epochMsSchema,
  reason: z.enum(CLAIM_REASONS),
  version: counterOut,
});
export type ClaimRecordWire = z.infer<typeof claimRecordWireSchema>;

export function claimToWire(record: ClaimRecord): ClaimRecordWire {
  return { ...record, fencingToken: formatCounter(record.fencingToken), version: formatCounter(record.version) };
}

export function claimFromWire(wire: ClaimRecordWire): ClaimRecord {
  return { ...wire, fencingToken: BigInt(wire.fencingToken), version: BigInt(wire.version) };
}

const operationId = nameSchema.optional().describe("client-chosen id; a retry with the same id replays the response");

export const acquireBodySchema = z.strictObject({
  generationId: nameSchema,
  ttlMs: ttlMsSchema,
  allowEmptyOnly: z.boolean().optional(),
  operationId,
});
export const renewBodySchema = z.strictObject({
  generationId: nameSchema,
  token: counterSchema,
  ttlMs: ttlMsSchema,
  operationId,
});
export const prepareBodySchema = z.strictObject({
  fromGeneration: nameSchema,
  // "" or a valid name: the machine answers SPEC's `invalid_request` for "" (and for = from)
  // after the ownership checks; anything else that is not a name is rejected up front.
  toGeneration: z.union([z.literal(""), nameSchema]),
  token: counterSchema,
  ttlMs: ttlMsSchema,
  operationId,
});
export const commitBodySchema = z.strictObject({
  fromGeneration: nameSchema,
  toGeneration: nameSchema,
  expectedToken: counterSchema,
  ttlMs: ttlMsSchema,
  operationId,
});
export const abortBodySchema = z.strictObject({
  fromGeneration: nameSchema,
  toGeneration: nameSchema,
  expectedToken: counterSchema,
  operationId,
});
export const releaseBodySchema = z.strictObject({
  generationId: nameSchema,
  token: counterSchema,
  operationId,
});

export type AcquireBody = z.output<typeof acquireBodySchema>;
export type RenewBody = z.output<typeof renewBodySchema>;
export type PrepareBody = z.output<typeof prepareBodySchema>;
export type CommitBody = z.output<typeof commitBodySchema>;
export type AbortBody = z.output<typeof abortBodySchema>;
export type ReleaseBody = z.output<typeof releaseBodySchema>;

/** Success body of every claim route. */
export const claimResponseSchema = z.strictObject({ claim: claimRecordWireSchema });
export type ClaimResponse = z.infer<typeof claimResponseSchema>;

/** Watch messages, server → client. */
export type ClaimWatchMessage =
  | { type: "snapshot"; claim: ClaimRecordWire | null; truncated?: true }
  | { type: "event"; reason: ClaimEventReason; claim: ClaimRecordWire; timeMs: number }
  | { type: "pong" };

export const claimWatchQuerySchema = z.strictObject({ afterVersion: counterSchema.optional() });
