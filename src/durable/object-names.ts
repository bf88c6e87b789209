/**
 * Durable Object names: one object per (namespace, kind, identity).
 *
 * Guarantees: the name is the JSON array `[namespace, kind, ...identity]`, which is
 * injective, so no two distinct identities (in any namespace, of any kind) share an object,
 * whatever characters their names contain. See docs/adr/0003-object-naming.md.
 *
 * Does not: make the name known to every instance. The runtime gives `ctx.id.name` only to
 * an instance a named call started; one it starts by itself (an alarm after a restart, a
 * deploy or an eviction) has none, so an object that needs its namespace then keeps it in
 * its own storage (durable/index-outbox.ts, listing/shard-store.ts).
 */
export type ObjectKind = "claim" | "generation" | "scope" | "index" | "index-shard";

export function objectName(namespace: string, kind: ObjectKind, ...identity: string[]): string {
  return JSON.stringify([namespace, kind, ...identity]);
}

/** The namespace of the instance's own name; undefined when the runtime gave it none. */
export function namespaceOf(ctx: DurableObjectState): string | undefined {
  const name = ctx.id.name;
  if (name === undefined) return undefined;
  try {
    const parsed = JSON.parse(name) as unknown;
    return Array.isArray(parsed) && typeof parsed[0] === "string" ? parsed[0] : undefined;
  } catch {
    return undefined;
  }
}
