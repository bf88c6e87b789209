/**
 * Generations on the wire (docs/protocol.md#generations): record, bodies, the state set, and
 * the generation's lease (docs/protocol.md#sessions): its keepalive and the lease channel's
 * messages.
 *
 * Guarantees: one zod schema per shape, shared by the router, OpenAPI and the client; the
 * lease epoch is a counter codec (`bigint` in code, a decimal string on the wire), so
 * {@link generationToWire} is the only conversion of a record for the wire. A record from a
 * server that predates leases decodes with no lease (`leaseEpoch` 0, `leaseExpiresAtMs` 0).
 */
import { z } from "zod";
import { counterSchema } from "./counter.ts";
import { encodeOnce } from "./encode-once.ts";
import { TTL_MAX_MS, TTL_MIN_MS, epochMsSchema, freeTextSchema, ttlMsSchema } from "./fields.ts";
import { nameSchema } from "./names.ts";
import { pingMessageSchema, pongMessageSchema } from "./watch.ts";

export const GENERATION_STATES = [
  "joining",
  "standby",
  "preparing",
  "active",
  "draining",
  "transferring",
  "retired",
  "failed",
] as const;
export type GenerationState = (typeof GENERATION_STATES)[number];

export const generationRecordSchema = z.object({
  id: z.string(),
  service: z.string(),
  instanceId: z.string(),
  state: z.enum(GENERATION_STATES),
  startedAtMs: epochMsSchema,
  updatedAtMs: epochMsSchema,
  reason: z.string(),
  leaseExpiresAtMs: epochMsSchema
    .default(0)
    .describe("the lease's deadline (server clock); 0 when the generation holds no lease"),
  leaseEpoch: counterSchema
    .default(0n)
    .describe("+1 each time a lease starts after none, or after one expired or ended; 0: never held one"),
});
/** The generation record as code sees it (the lease epoch as bigint). */
export type GenerationRecord = z.output<typeof generationRecordSchema>;
/** The generation record on the wire (the lease epoch as a decimal string). */
export type GenerationRecordWire = z.input<typeof generationRecordSchema>;

/** The wire form of a record (the codec's `encode`), computed once per record object. */
export const generationToWire: (record: GenerationRecord) => GenerationRecordWire = encodeOnce(
  (record: GenerationRecord) => generationRecordSchema.encode(record),
);

export const registerGenerationBodySchema = z.strictObject({
  id: nameSchema,
  service: nameSchema,
  instanceId: nameSchema,
});
export type RegisterGenerationBody = z.output<typeof registerGenerationBodySchema>;

/** Free-text reasons are bounded so a record stays small. */
export const REASON_MAX_LENGTH = 1024;

export const patchGenerationBodySchema = z.strictObject({
  state: z.enum(GENERATION_STATES),
  reason: freeTextSchema(REASON_MAX_LENGTH).optional(),
});
export type PatchGenerationBody = z.output<typeof patchGenerationBodySchema>;

export const generationResponseSchema = z.object({ generation: generationRecordSchema });
export type GenerationResponse = z.output<typeof generationResponseSchema>;

const operationId = nameSchema.optional().describe("client-chosen id; a retry with the same id replays the response");

/** `POST …/generations/{id}/keepalive`: start the lease, or extend it to at least now + ttlMs. */
export const keepaliveBodySchema = z.strictObject({ ttlMs: ttlMsSchema, operationId });
export type KeepaliveBody = z.output<typeof keepaliveBodySchema>;

/** `POST …/generations/{id}/lease/end`: end the lease now (as if it expired). */
export const endLeaseBodySchema = z.strictObject({ operationId });
export type EndLeaseBody = z.output<typeof endLeaseBodySchema>;

/** `ttlMs` in a query: decimal text on the wire ⇄ a number within the lease bounds in code. */
const ttlMsQuerySchema = z.codec(
  z
    .string()
    .regex(/^[1-9][0-9]{0,8}$/, { message: "must be an integer number of milliseconds" })
    .describe(`lease duration in milliseconds, ${TTL_MIN_MS}..${TTL_MAX_MS}`),
  ttlMsSchema,
  { decode: (text) => Number(text), encode: (value) => String(value) },
);

/** The lease channel's ttl when its query names none (the client's default lease ttl). */
export const DEFAULT_LEASE_CHANNEL_TTL_MS = 15_000;

/** The lease channel's query: the ttl that opening the channel and each ping extend the lease by. */
export const leaseChannelQuerySchema = z.strictObject({
  ttlMs: ttlMsQuerySchema.optional().describe(`default ${DEFAULT_LEASE_CHANNEL_TTL_MS}`),
});

/** Why a lease ended: its deadline passed, `lease/end`, or the generation retired or failed. */
export const LEASE_END_REASONS = ["expired", "ended", "retired", "failed"] as const;
export type LeaseEndReason = (typeof LEASE_END_REASONS)[number];

/** Lease channel, server → client: the record, first (opening the channel is a keepalive). */
export const leaseGenerationMessageSchema = z.object({
  type: z.literal("generation"),
  generation: generationRecordSchema,
});
/** Lease channel, server → client: the deadline the object promises moved. */
export const leaseDeadlineMessageSchema = z.object({
  type: z.literal("lease"),
  leaseEpoch: counterSchema,
  leaseExpiresAtMs: epochMsSchema,
});
/** Lease channel, server → client: the lease ended (the server closes the channel after it). */
export const leaseEndedMessageSchema = z.object({
  type: z.literal("ended"),
  leaseEpoch: counterSchema,
  reason: z.enum(LEASE_END_REASONS),
});
/** Every message the lease channel delivers. */
export const leaseChannelServerMessageSchema = z.discriminatedUnion("type", [
  leaseGenerationMessageSchema,
  leaseDeadlineMessageSchema,
  leaseEndedMessageSchema,
  pongMessageSchema,
]);
export type LeaseChannelMessage = z.output<typeof leaseChannelServerMessageSchema>;
/** Lease channel, client → server: pings, each a keepalive (the runtime answers them). */
export const leaseChannelClientMessageSchema = pingMessageSchema;
