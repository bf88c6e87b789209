/**
 * Which listing shard an object delivers to (docs/listing.md, docs/adr/0008-sharded-listing-index.md).
 *
 * Guarantees: a pure function of (kind, key, shard count): every instance of an object picks
 * the same shard for the same count, and keys spread evenly over the shards (32-bit FNV-1a
 * over the UTF-8 bytes, so no name pattern — `orders-1`, `orders-2`, … — piles onto one).
 * Changing the count moves future deliveries only; what sits in a shard is forwarded by that
 * shard all the same, and the namespace index applies entries by sequence number, so a
 * delivery that arrives through the old shard after one through the new cannot undo it.
 *
 * Does not: order anything. Listing order is the namespace index's (UTF-8 byte order).
 */

/** Shards when `LISTING_SHARDS` is absent. */
export const DEFAULT_LISTING_SHARDS = 16;
/** Most shards a namespace may be configured with. */
export const MAX_LISTING_SHARDS = 1024;

/** Shard number in `[0, shards)` for an object's listing key. */
export function listingShardOf(kind: string, key: string, shards: number): number {
  let hash = 0x811c9dc5;
  for (const byte of new TextEncoder().encode(`${kind}\u0000${key}`)) {
    hash ^= byte;
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash % shards;
}

/** The configured shard count: a whole number 1…{@link MAX_LISTING_SHARDS}, else the default. */
export function listingShardCount(configured: string | undefined): number {
  const n = configured === undefined ? NaN : Number(configured);
  return Number.isInteger(n) && n >= 1 && n <= MAX_LISTING_SHARDS ? n : DEFAULT_LISTING_SHARDS;
}
