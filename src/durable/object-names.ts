/**
 * Durable Object names: one object per (namespace, kind, identity).
 *
 * Guarantees: the name is the JSON array `[namespace, kind, ...identity]`, which is
 * injective, so no two distinct identities (in any namespace, of any kind) share an object,
 * whatever characters their names contain. See docs/adr/0003-object-naming.md.
 */
export type ObjectKind = "claim" | "generation" | "scope" | "index" | "index-shard";

export function objectName(namespace: string, kind: ObjectKind, ...identity: string[]): string {
  return JSON.stringify([namespace, kind, ...identity]);
}
