/**
 * Field schemas shared by every resource: durations, epoch times, base64 and the strict
 * object helper (unknown fields are rejected, docs/protocol.md#wire-conventions).
 */
import { z } from "zod";
import { hasLoneSurrogate } from "./names.ts";

/** Lease durations: 100 ms … 24 h (docs/protocol.md#wire-conventions). */
export const TTL_MIN_MS = 100;
export const TTL_MAX_MS = 24 * 60 * 60 * 1000;

/** A `ttlMs` field. */
export const ttlMsSchema = z
  .number()
  .int()
  .min(TTL_MIN_MS)
  .max(TTL_MAX_MS)
  .describe(`lease duration in milliseconds, ${TTL_MIN_MS}..${TTL_MAX_MS}`);

/** A non-negative integer duration such as `waitMs` (bounded by the lease maximum). */
export const durationMsSchema = z.number().int().min(0).max(TTL_MAX_MS);

/** Epoch milliseconds on the server clock; 0 means unset. */
export const epochMsSchema = z.number().int().min(0).describe("epoch milliseconds (server clock), 0 = unset");

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** Standard base64 (with padding), as used for binary values on the wire. */
export const base64Schema = z.string().regex(BASE64, { message: "must be standard base64" });

/**
 * Free text kept as given (a generation's `reason`): at most `maxLength` UTF-16 code units
 * and valid Unicode — a lone surrogate is refused, because the record would not read back as
 * it was accepted (see `hasLoneSurrogate`).
 */
export function freeTextSchema(maxLength: number) {
  return z
    .string()
    .max(maxLength)
    .refine((value) => !hasLoneSurrogate(value), { message: "must be valid UTF-8 (no lone surrogates)" })
    .describe(`free text, at most ${maxLength} UTF-16 code units, no lone surrogates`);
}
