/**
 * Fence keys and the `Shiftlock-Fence` header value.
 *
 * Guarantees: a fence key names what a token fences, namespace included —
 * `{ns}/claims/{name}` for a claim and `{ns}/scopes/{volumeId}/{objectStoreId}/{key}` for a
 * coord write lease, each part percent-encoded (`encodeURIComponent`), so two different
 * (namespace, kind, identity) triples never share a key and a key never contains `=`.
 * The header value is `<key>=<token>`; {@link parseFenceHeader} is its only reader.
 *
 * Does not: check that the names are valid shiftlock names (the service did when it
 * granted the lease).
 */
import { formatCounter, parseCounter } from "../../protocol/counter.ts";

/** The HTTP header that carries a fence: `Shiftlock-Fence: <key>=<token>`. */
export const FENCE_HEADER = "Shiftlock-Fence";

/** A fence as a lease hands it out: the key, the token and the header value carrying both. */
export interface FenceCredential {
  readonly key: string;
  readonly token: bigint;
  /** `<key>=<token>`, the value of the {@link FENCE_HEADER} header. */
  readonly header: string;
}

/** The fence key of a claim: `{ns}/claims/{name}`. */
export function claimFenceKey(namespace: string, claimName: string): string {
  return [namespace, "claims", claimName].map(part).join("/");
}

/** The fence key of a coord scope: `{ns}/scopes/{volumeId}/{objectStoreId}/{key}`. */
export function scopeFenceKey(namespace: string, volumeId: string, objectStoreId: string, key: string): string {
  return [namespace, "scopes", volumeId, objectStoreId, key].map(part).join("/");
}

/** A fence credential for `key` and `token`. */
export function fenceCredential(key: string, token: bigint): FenceCredential {
  return Object.freeze({ key, token, header: `${key}=${formatCounter(token)}` });
}

/** Parse a `Shiftlock-Fence` value; undefined when it is not `<key>=<canonical token>`. */
export function parseFenceHeader(value: string): { key: string; token: bigint } | undefined {
  const at = value.lastIndexOf("=");
  if (at <= 0) return undefined;
  const key = value.slice(0, at).trim();
  const token = parseCounter(value.slice(at + 1).trim());
  if (key === "" || key.includes("=") || token === undefined) return undefined;
  return { key, token };
}

function part(name: string): string {
  return encodeURIComponent(name);
}
