/**
 * The opaque cursor of a listing page (docs/protocol.md#listing), made and checked the same way by the index
 * object and the in-memory backends.
 *
 * Guarantees:
 * - A cursor names the last key of the page it ends and is bound to the namespace, the list
 *   and the filters it was made for; a checksum covers all of them. A cursor that does not
 *   decode, fails its checksum, or is replayed against another namespace, list or filter
 *   set is refused with `invalid_request` (field `cursor`), never silently reinterpreted.
 * - Pure and synchronous: no clock, no I/O.
 *
 * Does not: authenticate anything. The checksum catches tampering and misuse, not a forger
 * who recomputes it: a forged cursor only starts a page at another name the caller may
 * already list, so it grants nothing.
 */
import { ShiftlockError } from "../protocol/errors.ts";

/** What a cursor is bound to: the namespace, the list, and its filters in a fixed order. */
export interface CursorScope {
  namespace: string;
  list: "claims" | "generations" | "scopes";
  filters: readonly (string | undefined)[];
}

const VERSION = 1;

/** 53-bit string hash (cyrb53): enough to tell a tampered cursor from ours. */
function hash53(text: string): string {
  let h1 = 0xdeadbeef;
  let h2 = 0x41c6ce57;
  for (let i = 0; i < text.length; i++) {
    const ch = text.charCodeAt(i);
    h1 = Math.imul(h1 ^ ch, 2654435761);
    h2 = Math.imul(h2 ^ ch, 1597334677);
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909);
  return (4294967296 * (2097151 & h2) + (h1 >>> 0)).toString(36);
}

function checksum(scope: CursorScope, after: string): string {
  return hash53(JSON.stringify([VERSION, scope.namespace, scope.list, scope.filters, after]));
}

function toBase64Url(text: string): string {
  const bytes = new TextEncoder().encode(text);
  let binary = "";
  for (const b of bytes) binary += String.fromCharCode(b);
  return btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function fromBase64Url(text: string): string | undefined {
  if (!/^[A-Za-z0-9_-]*$/.test(text)) return undefined;
  try {
    const binary = atob(text.replace(/-/g, "+").replace(/_/g, "/"));
    const bytes = Uint8Array.from(binary, (c) => c.charCodeAt(0));
    return new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(bytes);
  } catch {
    return undefined;
  }
}

/** The cursor of a page whose last key is `after`. */
export function encodeCursor(scope: CursorScope, after: string): string {
  return toBase64Url(JSON.stringify({ v: VERSION, a: after, s: checksum(scope, after) }));
}

/** The last key of the previous page, or `invalid_request` (see the module doc). */
export function decodeCursor(scope: CursorScope, cursor: string): string {
  const refuse = (): never => {
    throw new ShiftlockError("invalid_request", "cursor is not a cursor of this listing", { field: "cursor" });
  };
  const text = fromBase64Url(cursor);
  if (text === undefined) return refuse();
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return refuse();
  }
  const { v, a, s } = (value ?? {}) as { v?: unknown; a?: unknown; s?: unknown };
  if (v !== VERSION || typeof a !== "string" || typeof s !== "string" || s !== checksum(scope, a)) return refuse();
  return a;
}

const encoder = new TextEncoder();

/** Compare two strings by the bytes of their UTF-8 form (docs/protocol.md#listing order). */
export function compareUtf8(a: string, b: string): number {
  const x = encoder.encode(a);
  const y = encoder.encode(b);
  const n = Math.min(x.length, y.length);
  for (let i = 0; i < n; i++) if (x[i] !== y[i]) return x[i]! - y[i]!;
  return x.length - y.length;
}

/** Separator of a scope's listing key: a control character, which no name contains. */
export const SCOPE_KEY_SEPARATOR = "\u0001";

/** The listing key of a scope: ordered by volume, then store, then key ("" first). */
export function scopeListKey(scope: { volumeId: string; objectStoreId: string; key: string }): string {
  return [scope.volumeId, scope.objectStoreId, scope.key].join(SCOPE_KEY_SEPARATOR);
}
