/**
 * Listing and stats on the wire (docs/protocol.md#listing): the query of each list, its page, the
 * scope summary, the namespace stats, and what an object hands its namespace index.
 *
 * Guarantees:
 * - One schema per shape, used by the router to validate, by OpenAPI to describe and by the
 *   client to encode queries and decode pages; `limit` is a codec (decimal text on the wire,
 *   a number 1–{@link LIST_LIMIT_MAX} in code, default {@link LIST_LIMIT_DEFAULT}).
 * - A page's `cursor` is opaque (core/listing-cursor.ts makes and checks it) and `null` on
 *   the last page. Names are ordered by the bytes of their UTF-8 form.
 *
 * Does not: decide what a page holds (the index object does) or promise freshness: the index
 * may lag the objects by up to 2 s (docs/listing.md).
 */
import { z } from "zod";
import { CLAIM_PHASES, claimRecordSchema } from "./claims.ts";
import { counterSchema } from "./counter.ts";
import { epochMsSchema } from "./fields.ts";
import { GENERATION_STATES, generationRecordSchema } from "./generations.ts";
import { nameSchema } from "./names.ts";

/** Largest page (docs/protocol.md#operating-at-scale). */
export const LIST_LIMIT_MAX = 500;
/** Page size when `limit` is absent (docs/protocol.md#operating-at-scale). */
export const LIST_LIMIT_DEFAULT = 100;
/** Longest cursor accepted (ours are far shorter; anything longer is not ours). */
export const CURSOR_MAX_LENGTH = 2048;

const LIMIT_TEXT = /^[1-9][0-9]{0,2}$/;

/** `limit`: decimal text 1–500 on the wire ⇄ a number in code. */
export const limitSchema = z.codec(
  z
    .string()
    .regex(LIMIT_TEXT, { message: `must be an integer from 1 to ${LIST_LIMIT_MAX}` })
    .describe(`page size, 1–${LIST_LIMIT_MAX} (default ${LIST_LIMIT_DEFAULT})`),
  z.number().int().min(1).max(LIST_LIMIT_MAX),
  { decode: (text) => Number(text), encode: (value) => String(value) },
);

/** `cursor`: the previous page's opaque cursor. */
export const cursorSchema = z
  .string()
  .min(1)
  .max(CURSOR_MAX_LENGTH)
  .describe("the previous page's cursor, unchanged (opaque)");

const page = { limit: limitSchema.optional(), cursor: cursorSchema.optional() };

/** `GET /v1/ns/{ns}/claims` query. */
export const listClaimsQuerySchema = z.strictObject({
  prefix: z.string().max(256).optional().describe("only names starting with this text"),
  phase: z.enum(CLAIM_PHASES).optional(),
  owner: nameSchema.optional().describe("only claims whose ownerGeneration is this"),
  ...page,
});
export type ListClaimsQuery = z.output<typeof listClaimsQuerySchema>;

/** `GET /v1/ns/{ns}/generations` query. */
export const listGenerationsQuerySchema = z.strictObject({
  service: nameSchema.optional(),
  state: z.enum(GENERATION_STATES).optional(),
  ...page,
});
export type ListGenerationsQuery = z.output<typeof listGenerationsQuerySchema>;

/** `GET /v1/ns/{ns}/scopes` query. */
export const listScopesQuerySchema = z.strictObject({ volumeId: nameSchema.optional(), ...page });
export type ListScopesQuery = z.output<typeof listScopesQuerySchema>;

/** One scope as the listing shows it. `objectStoreId` and `key` are "" when absent. */
export const scopeSummarySchema = z.object({
  volumeId: z.string(),
  objectStoreId: z.string(),
  key: z.string(),
  generation: counterSchema,
  held: z.boolean(),
  holder: z.string().describe('the holding participant id; "" when free'),
  wantLock: z.boolean().describe("someone is queued or asked while it was held (follows within 2 s)"),
  leaseExpiresAtMs: epochMsSchema.describe(
    "the held lease's deadline as of its grant (server clock; keepalives do not reach the listing); 0 when not held",
  ),
});
export type ScopeSummary = z.output<typeof scopeSummarySchema>;
export type ScopeSummaryWire = z.input<typeof scopeSummarySchema>;

const nextCursor = z.string().nullable().describe("pass as ?cursor= for the next page; null on the last page");

export const claimPageSchema = z.object({ claims: z.array(claimRecordSchema), cursor: nextCursor });
export const generationPageSchema = z.object({ generations: z.array(generationRecordSchema), cursor: nextCursor });
export const scopePageSchema = z.object({ scopes: z.array(scopeSummarySchema), cursor: nextCursor });
export type ClaimPage = z.output<typeof claimPageSchema>;
export type GenerationPage = z.output<typeof generationPageSchema>;
export type ScopePage = z.output<typeof scopePageSchema>;

/** The counters of a namespace (docs/operations.md). */
export const COUNTER_NAMES = [
  "acquires",
  "expiries",
  "transfersCommitted",
  "transfersAborted",
  "watchersConnected",
  "laggingCloses",
] as const;
export type CounterName = (typeof COUNTER_NAMES)[number];

/** Counts over a window: the named counters, plus refusals by error code. */
export const counterWindowSchema = z.object({
  ...Object.fromEntries(COUNTER_NAMES.map((name) => [name, z.number().int().min(0)])),
  conflicts: z.record(z.string(), z.number().int().min(0)).describe("refused mutations by error code"),
}) as z.ZodObject<
  {
    [K in CounterName]: z.ZodNumber;
  } & { conflicts: z.ZodRecord<z.ZodString, z.ZodNumber> }
>;
export type CounterWindow = z.output<typeof counterWindowSchema>;

/** `GET /v1/ns/{ns}/stats`. */
export const statsSchema = z.object({
  lastMinute: counterWindowSchema,
  lastHour: counterWindowSchema,
  claimsByPhase: z.object(Object.fromEntries(CLAIM_PHASES.map((p) => [p, z.number().int().min(0)]))) as z.ZodObject<{
    [K in (typeof CLAIM_PHASES)[number]]: z.ZodNumber;
  }>,
  generations: z.number().int().min(0),
  scopes: z.number().int().min(0),
});
export type Stats = z.output<typeof statsSchema>;
