/**
 * Claims on the wire (docs/protocol.md#claims): the record, the request bodies and the watch messages.
 *
 * Guarantees: one zod schema per shape, used by the router to validate, by OpenAPI to
 * describe and by the client to encode requests and decode answers. Counters are codecs
 * (`bigint` in code, decimal strings on the wire), so `schema.decode(wire)` and
 * `schema.encode(value)` are the only conversions. Response and message schemas ignore
 * unknown fields (an older client keeps working against a newer server); request bodies
 * reject them (docs/protocol.md#wire-conventions).
 */
import { z } from "zod";
import { encodeOnce } from "./encode-once.ts";
import { counterSchema } from "./counter.ts";
import { epochMsSchema, ttlMsSchema } from "./fields.ts";
import { nameSchema } from "./names.ts";
import { pingMessageSchema, pongMessageSchema } from "./watch.ts";

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
  "evicted",
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
  "evicted",
] as const;
export type ClaimEventReason = (typeof CLAIM_EVENT_REASONS)[number];

/** The claim record: decimal-string counters on the wire, `bigint` in code (a codec). */
export const claimRecordSchema = z.object({
  name: z.string(),
  ownerGeneration: z.string(),
  fencingToken: counterSchema,
  phase: z.enum(CLAIM_PHASES),
  acquiredAtMs: epochMsSchema,
  expiresAtMs: epochMsSchema,
  previousOwner: z.string(),
  pendingSuccessor: z.string(),
  drainStatus: z.enum(["", "complete"]),
  transferStatus: z.enum(["", "prepared", "committed", "aborted"]),
  lastHeartbeatMs: epochMsSchema,
  reason: z.enum(CLAIM_REASONS),
  version: counterSchema,
  bound: z
    .boolean()
    .default(false)
    .describe("held under its owner generation's lease (docs/protocol.md#sessions), not a deadline of its own"),
  leaseEpoch: counterSchema.default(0n).describe("the owner's lease epoch a bound claim belongs to; 0 when unbound"),
});
/** The claim record as code sees it (counters as bigint). */
export type ClaimRecord = z.output<typeof claimRecordSchema>;
/** The claim record on the wire (counters as decimal strings). */
export type ClaimRecordWire = z.input<typeof claimRecordSchema>;

/**
 * The wire form of a record (the codec's `encode`), computed once per record object: the
 * response, the events and the listing outbox of one mutation share it (encode-once.ts).
 */
export const claimToWire: (record: ClaimRecord) => ClaimRecordWire = encodeOnce((record: ClaimRecord) =>
  claimRecordSchema.encode(record),
);

const operationId = nameSchema.optional().describe("client-chosen id; a retry with the same id replays the response");

/** `bound: true` instead of `ttlMs`: hold under the generation's lease (docs/protocol.md#sessions). */
const bound = z
  .boolean()
  .optional()
  .describe("true: held under the generation's lease instead of ttlMs (the two are exclusive)");

/**
 * Exactly one of `ttlMs` and `bound: true` (docs/protocol.md#sessions): both, or neither, is
 * `invalid_request` naming the field.
 */
function ttlOrBound(body: { ttlMs?: number | undefined; bound?: boolean | undefined }, ctx: z.RefinementCtx): void {
  if (body.bound === true && body.ttlMs !== undefined) {
    ctx.addIssue({ code: "custom", path: ["bound"], message: "bound: true and ttlMs are exclusive" });
  } else if (body.bound !== true && body.ttlMs === undefined) {
    ctx.addIssue({ code: "custom", path: ["ttlMs"], message: "ttlMs is required unless bound is true" });
  }
}

export const acquireBodySchema = z
  .strictObject({
    generationId: nameSchema,
    ttlMs: ttlMsSchema.optional(),
    bound,
    allowEmptyOnly: z.boolean().optional(),
    operationId,
  })
  .superRefine(ttlOrBound);
export const renewBodySchema = z.strictObject({
  generationId: nameSchema,
  token: counterSchema,
  ttlMs: ttlMsSchema,
  operationId,
});
export const prepareBodySchema = z
  .strictObject({
    fromGeneration: nameSchema,
    // "" or a valid name: the machine answers the protocol's `invalid_request` for "" (and for = from)
    // after the ownership checks; anything else that is not a name is rejected up front.
    toGeneration: z.union([z.literal(""), nameSchema]),
    token: counterSchema,
    ttlMs: ttlMsSchema.optional(),
    bound,
    operationId,
  })
  .superRefine(ttlOrBound);
export const commitBodySchema = z
  .strictObject({
    fromGeneration: nameSchema,
    toGeneration: nameSchema,
    expectedToken: counterSchema,
    ttlMs: ttlMsSchema.optional(),
    bound,
    operationId,
  })
  .superRefine(ttlOrBound);
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

// Decoded bodies by op name: `ClaimBodies` in claim-routes.ts (one type per route, derived).

/** Success body of every claim route. */
export const claimResponseSchema = z.object({ claim: claimRecordSchema });
/** The success body on the wire. */
export type ClaimResponseWire = z.input<typeof claimResponseSchema>;

/** Watch, server → client: the opening snapshot (`truncated` when history no longer reaches `afterVersion`). */
export const claimSnapshotMessageSchema = z.object({
  type: z.literal("snapshot"),
  claim: claimRecordSchema.nullable(),
  truncated: z.literal(true).optional().describe("history no longer reaches afterVersion"),
});
/** Watch, server → client: one committed change, in version order. */
export const claimEventMessageSchema = z.object({
  type: z.literal("event"),
  reason: z.enum(CLAIM_EVENT_REASONS),
  claim: claimRecordSchema,
  timeMs: epochMsSchema,
  note: z.string().optional().describe("evicted events: the operator's note, when one was given"),
});
/** Every message a claim watch delivers. */
export const claimWatchServerMessageSchema = z.discriminatedUnion("type", [
  claimSnapshotMessageSchema,
  claimEventMessageSchema,
  pongMessageSchema,
]);
export type ClaimWatchMessage = z.output<typeof claimWatchServerMessageSchema>;

/** Watch, client → server: a ping, or the version of the last event processed (docs/protocol.md#operating-at-scale). */
export const claimWatchClientMessageSchema = z.discriminatedUnion("type", [
  pingMessageSchema,
  z.strictObject({ type: z.literal("ack"), version: counterSchema.describe("last event version processed") }),
]);

export const claimWatchQuerySchema = z.strictObject({ afterVersion: counterSchema.optional() });

/** Most ops one batch may carry (docs/protocol.md#batch). */
export const BATCH_MAX_OPS = 128;

/** The single-route names a batch op may use (docs/protocol.md#batch). */
export const BATCH_OPS = ["acquire", "renew", "release", "prepare", "commit", "abort"] as const;
export type BatchOpName = (typeof BATCH_OPS)[number];

/**
 * `POST /v1/ns/{ns}/batch`: 1–128 ops, each `{op, claim, ...the single route's body}`, each
 * claim at most once. Only the envelope is checked here; each op's own body is checked
 * against its single route's schema when it runs, so a bad op fails alone, exactly as the
 * single route would answer it.
 */
export const batchBodySchema = z
  .strictObject({
    ops: z
      .array(z.looseObject({ op: z.enum(BATCH_OPS), claim: z.string() }))
      .min(1)
      .max(BATCH_MAX_OPS),
  })
  .superRefine((body, ctx) => {
    const seen = new Set<string>();
    body.ops.forEach((op, i) => {
      if (seen.has(op.claim))
        ctx.addIssue({ code: "custom", path: ["ops", i, "claim"], message: "claim appears twice" });
      seen.add(op.claim);
    });
  });
export type BatchBody = z.output<typeof batchBodySchema>;

/** One op's answer: exactly the status and body its single route would have answered. */
export const batchResultSchema = z.object({ status: z.number().int(), body: z.unknown() });
export const batchResponseSchema = z.object({ results: z.array(batchResultSchema) });
