// Settle a namespace's listing deterministically: deliver what the named objects staged, then
// run every listing shard's forwarding alarm (no waiting for the objects' coalescing window or
// the shards' forwarding window).
import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { DEFAULT_LISTING_SHARDS, listingShardCount } from "../../src/core/listing-shard.ts";
import { objectName } from "../../src/durable/object-names.ts";
import type { Flushable } from "./test-entry.ts";
import type { IndexShard } from "../../src/listing/index-shard.ts";

/** The shard count the test worker runs with. */
export const SHARDS = listingShardCount(
  (env as { LISTING_SHARDS?: string }).LISTING_SHARDS ?? String(DEFAULT_LISTING_SHARDS),
);

export function shardStub(ns: string, shard: number): DurableObjectStub<IndexShard> {
  return env.INDEX_SHARDS.getByName(objectName(ns, "index-shard", String(shard)));
}

/** Deliver each object's staged entry, then forward every shard's pending batch. */
export async function settleListing(ns: string, objects: readonly DurableObjectStub[] = []): Promise<void> {
  for (const stub of objects) await runInDurableObject(stub, (o) => (o as unknown as Flushable).flushIndex());
  for (let i = 0; i < SHARDS; i++) await runDurableObjectAlarm(shardStub(ns, i));
}

/** Shards of `ns` with an alarm armed (forwarding still due). */
export async function armedShards(ns: string): Promise<number[]> {
  const armed: number[] = [];
  for (let i = 0; i < SHARDS; i++) {
    const at = await runInDurableObject(shardStub(ns, i), (_o, state) => state.storage.getAlarm());
    if (at !== null) armed.push(i);
  }
  return armed;
}
