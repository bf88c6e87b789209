/**
 * The namespace index (docs/listing.md): one Durable Object per namespace, named
 * `objectName(ns, "index")`, holding a copy of every claim, generation and scope record the
 * namespace's objects delivered (through their listing shards), and the namespace's counters.
 *
 * Guarantees:
 * - Fed only by the listing shards ({@link NamespaceIndex.applyBatch}), at most one batch per
 *   shard per forwarding window, whatever the namespace's traffic: no object ever waits for
 *   the index, and the index's request rate does not grow with the number of claims.
 *   Entries apply by sequence number, so replays and reorderings are harmless.
 * - Pages come from the store in UTF-8 byte order of the key, `limit + 1` rows read at most,
 *   with any filter; `/stats` reads tallies kept as entries change, never the entries.
 * - No alarm: the index never wakes on its own, so an idle namespace costs nothing.
 *
 * Does not: know about objects whose deliveries are still on their way (the objects' own
 * alarms and the shards' retries bring them; docs/listing.md "The lag guarantee").
 */
import { ShiftlockObject } from "../durable/object-base.ts";
import { meterMethods } from "../durable/object-meter.ts";
import { CLAIM_PHASES } from "../protocol/claims.ts";
import { COUNTER_NAMES, type CounterWindow, type Stats } from "../protocol/listing.ts";
import type { IndexBatch } from "../core/listing-entry.ts";
import { IndexStore, type PageQuery } from "./index-store.ts";

/** One page as the index answers it: records as their stored wire JSON, the last key, more or not. */
export interface IndexPage {
  /** Flat wire records (claims, generations and scope summaries have no nested fields). */
  records: Record<string, string | number | boolean>[];
  lastKey: string | undefined;
  more: boolean;
  /** SQLite rows read for the page (the scale model checks it stays `limit + 1`). */
  rowsRead: number;
}

export class NamespaceIndex extends ShiftlockObject {
  protected static override readonly feedsListing = false;
  private readonly store: IndexStore;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.store = new IndexStore(ctx.storage);
    this.startUp(() => this.store.open());
  }

  /** One shard's batch: newer entries, summed counters. */
  applyBatch(batch: IndexBatch): void {
    this.store.applyBatch(batch.entries, batch.counters, this.clock.nowMs());
  }

  /** A page of `q.kind` (see {@link IndexStore.page}). */
  page(q: PageQuery): IndexPage {
    const { keys, records, more, rowsRead } = this.store.page(q);
    return {
      records: records.map((r) => JSON.parse(r) as IndexPage["records"][number]),
      lastKey: keys.at(-1),
      more,
      rowsRead,
    };
  }

  /** The counters of the last minute and hour, and what the index holds. */
  stats(): Stats {
    const nowMs = this.clock.nowMs();
    const tallies = this.store.tallies();
    const claimsByPhase = Object.fromEntries(
      CLAIM_PHASES.map((p) => [p, tallies.claimsByPhase[p] ?? 0]),
    ) as Stats["claimsByPhase"];
    return {
      lastMinute: toWindow(this.store.counterSums(nowMs - 60_000)),
      lastHour: toWindow(this.store.counterSums(nowMs - 3_600_000)),
      claimsByPhase,
      generations: tallies.generations,
      scopes: tallies.scopes,
    };
  }

  /** An index armed by an older version (reconciliation) fires once more and stays quiet. */
  override alarm(): void {
    this.alarms.fired();
  }
}

meterMethods(NamespaceIndex.prototype, ["applyBatch", "page", "stats", "alarm"]);

function toWindow(sums: Record<string, number>): CounterWindow {
  const window = {
    ...Object.fromEntries(COUNTER_NAMES.map((name) => [name, sums[name] ?? 0])),
    conflicts: {},
  } as CounterWindow;
  for (const [name, n] of Object.entries(sums)) {
    if (name.startsWith("conflict:")) window.conflicts[name.slice("conflict:".length)] = n;
  }
  return window;
}
