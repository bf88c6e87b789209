/**
 * Fence tokens: the unsigned 64-bit numbers a fence compares, and their text forms.
 *
 * Guarantees: a token is accepted as a `bigint` in 0 … 2^64 − 1 or as its canonical
 * decimal string (digits only, no sign, no leading zeros but "0": the wire form of every
 * shiftlock counter, docs/protocol.md); anything else throws a `TypeError` before a store
 * is touched. {@link padToken} renders a token as 20 digits, so that stores which can only
 * compare text (SQL columns, R2 metadata) order tokens as numbers.
 *
 * Does not: check that a token was ever issued; the fence only orders what it is shown.
 */
import { SORTABLE_COUNTER_DIGITS, U64_LIMIT, parseCounter, sortableCounter } from "../../protocol/counter.ts";

/** A fencing token or lease epoch: a bigint, or its canonical decimal string. */
export type FenceToken = bigint | string;

/** Digits of 2^64 − 1: every token fits in 20 decimal digits. */
export const PADDED_TOKEN_DIGITS = SORTABLE_COUNTER_DIGITS;

/** The token as a bigint; throws a `TypeError` naming `what` when it is not an unsigned 64-bit value. */
export function toTokenValue(token: FenceToken, what = "token"): bigint {
  if (typeof token === "bigint") {
    if (token < 0n || token > U64_LIMIT) throw new TypeError(`${what} must be an unsigned 64-bit integer`);
    return token;
  }
  if (typeof token === "string") {
    const value = parseCounter(token);
    if (value !== undefined) return value;
  }
  throw new TypeError(`${what} must be a bigint or a canonical decimal string below 2^64 (got ${String(token)})`);
}

/** The token as 20 zero-padded digits (text order = numeric order). */
export function padToken(token: FenceToken): string {
  return sortableCounter(toTokenValue(token));
}

/** Read a token stored by {@link padToken} (or canonical); undefined when the text is not one. */
export function parseStoredToken(text: unknown): bigint | undefined {
  if (typeof text !== "string" || !/^[0-9]{1,20}$/.test(text)) return undefined;
  const value = BigInt(text);
  return value <= U64_LIMIT ? value : undefined;
}
