/**
 * Generations on the wire (docs/protocol.md#generations): record, bodies and the state set.
 */
import { z } from "zod";
import { epochMsSchema, freeTextSchema } from "./fields.ts";
import { nameSchema } from "./names.ts";

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
});
export type GenerationRecord = z.infer<typeof generationRecordSchema>;

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
export type GenerationResponse = z.infer<typeof generationResponseSchema>;
