// The listing shard rule (core/listing-shard.ts): stable, in range, and even over names that
// share a pattern, so no shard becomes the namespace's hot object.
import { describe, expect, it } from "vitest";
import { DEFAULT_LISTING_SHARDS, listingShardCount, listingShardOf } from "../../src/core/listing-shard.ts";

describe("listingShardOf", () => {
  it("spreads patterned names evenly: every shard within 15 % of the mean", () => {
    for (const shards of [4, 16, 64]) {
      const counts = new Array<number>(shards).fill(0);
      const n = 64_000;
      for (let i = 0; i < n; i++) counts[listingShardOf("claim", `orders-${i}`, shards)]! += 1;
      const mean = n / shards;
      for (const c of counts) expect(Math.abs(c - mean) / mean).toBeLessThan(0.15);
    }
  });

  it("is a pure function of kind, key and count, in range", () => {
    expect(listingShardOf("claim", "a", 16)).toBe(listingShardOf("claim", "a", 16));
    expect(listingShardOf("claim", "\u{1F600}", 7)).toBeLessThan(7);
    expect(listingShardOf("claim", "x", 1)).toBe(0);
  });

  it("takes the configured count only when it is a whole number 1…1024", () => {
    expect(listingShardCount("32")).toBe(32);
    for (const bad of [undefined, "", "0", "-1", "1.5", "2000", "x"]) {
      expect(listingShardCount(bad)).toBe(DEFAULT_LISTING_SHARDS);
    }
  });
});
