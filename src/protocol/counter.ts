/**
 * 64-bit counters on the wire (fencing tokens, versions, generations, lease epochs).
 *
 * Guarantees: a counter travels as a canonical decimal string (digits only, no sign, no
 * leading zeros except "0", below 2^64) and is a `bigint` everywhere in code, so values
 * above 2^53 never lose precision. {@link counterSchema} is a zod codec: `decode` turns the
 * wire string into a bigint (the router's validation, the client's response decoding) and
 * `encode` turns a bigint back into the string (the server's responses, the client's
 * requests); no hand-written conversion exists anywhere else. See
 * docs/adr/0001-counters-as-decimal-strings.md.
 */
import { z } from "zod";

/** 2^64 − 1: the largest value a counter can carry. */
export const U64_LIMIT = (1n << 64n) - 1n;

/** The last fencing token that may be issued (docs/protocol.md#claims): 2^64 − 2. */
export const MAX_FENCING_TOKEN = (1n << 64n) - 2n;

const CANONICAL = /^(0|[1-9][0-9]*)$/;

/** JSON Schema pattern of the wire form (canonical, at most 20 digits). */
export const COUNTER_PATTERN = "^(0|[1-9][0-9]{0,19})$";

/** Parse a canonical counter string, or return undefined. */
export function parseCounter(text: string): bigint | undefined {
  if (!CANONICAL.test(text) || text.length > 20) return undefined;
  const value = BigInt(text);
  return value <= U64_LIMIT ? value : undefined;
}

/** Render a counter for the wire (and for storage: one text form everywhere). */
export function formatCounter(value: bigint): string {
  return value.toString(10);
}

/** Digits of 2^64 − 1: every counter fits in 20 decimal digits. */
export const SORTABLE_COUNTER_DIGITS = 20;

/** A counter as 20 zero-padded digits, for keys and columns that compare as text (text order = numeric order). */
export function sortableCounter(value: bigint): string {
  return formatCounter(value).padStart(SORTABLE_COUNTER_DIGITS, "0");
}

const wireCounter = z
  .string()
  .refine((s) => parseCounter(s) !== undefined, {
    message: "must be a canonical decimal string below 2^64 (digits only, no leading zeros)",
  })
  .describe("64-bit counter as a canonical decimal string (no sign, no leading zeros, below 2^64)");

/** A 64-bit counter: canonical decimal string on the wire ⇄ `bigint` in code. */
export const counterSchema = z.codec(wireCounter, z.bigint().min(0n).max(U64_LIMIT), {
  decode: (text) => BigInt(text),
  encode: (value) => formatCounter(value),
});
