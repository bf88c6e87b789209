/**
 * 64-bit counters on the wire (fencing tokens, versions, generations, lease epochs).
 *
 * Guarantees: a counter travels as a canonical decimal string (digits only, no sign, no
 * leading zeros except "0", below 2^64) and is a `bigint` everywhere in code, so values
 * above 2^53 never lose precision. See docs/adr/0001-counters-as-decimal-strings.md.
 */
import { z } from "zod";

/** 2^64 − 1: one above the largest representable counter. */
export const U64_LIMIT = (1n << 64n) - 1n;

/** The last fencing token that may be issued (SPEC §3): 2^64 − 2. */
export const MAX_FENCING_TOKEN = (1n << 64n) - 2n;

const CANONICAL = /^(0|[1-9][0-9]*)$/;

/** Parse a canonical counter string, or return undefined. */
export function parseCounter(text: string): bigint | undefined {
  if (!CANONICAL.test(text) || text.length > 20) return undefined;
  const value = BigInt(text);
  return value <= U64_LIMIT ? value : undefined;
}

/** Render a counter for the wire. */
export function formatCounter(value: bigint): string {
  return value.toString(10);
}

/** zod schema: a canonical counter string, parsed to bigint. */
export const counterSchema = z
  .string()
  .refine((s) => parseCounter(s) !== undefined, {
    message: "must be a canonical decimal string below 2^64 (digits only, no leading zeros)",
  })
  .transform((s) => BigInt(s));

/** zod schema for a counter in a response (output side, for OpenAPI). */
export const counterOut = z.string().regex(CANONICAL).describe("64-bit counter as a decimal string");
