/**
 * A listing shard (docs/listing.md, docs/adr/0008-sharded-listing-index.md): one of
 * `LISTING_SHARDS` Durable Objects per namespace, named `objectName(ns, "index-shard", i)`,
 * that take the objects' listing deliveries and forward them to the namespace index in
 * batches.
 *
 * Guarantees:
 * - Each object delivers to one shard, by its key (core/listing-shard.ts), so a shard receives
 *   1/`LISTING_SHARDS` of the namespace's listed changes; the namespace index receives at most
 *   one batch per shard per {@link FORWARD_MS}, however many objects changed.
 * - A delivery's entry is acknowledged only once it is committed here
 *   ({@link ShardStore.accept}): what an object was told arrived survives a restart of the
 *   shard. Its counters are added up in memory until forwarded, as the object kept them:
 *   they are statistics (Analytics Engine has every increment at once), so a restart loses
 *   the increments accepted since the last forward rather than every delivery paying a row
 *   per counter.
 * - Forwarding runs from the shard's one alarm, armed {@link FORWARD_MS} after the first
 *   pending delivery and only ever moved earlier; a failed forward is retried from the same
 *   alarm with backoff. With nothing pending the shard has no alarm: idle costs nothing.
 * - Entries apply at the index by sequence number, so a batch that arrives twice (a forward
 *   that succeeded but whose acknowledgement was lost) changes nothing the second time.
 * - A shard forwards only to its own namespace's index, however the runtime started it: the
 *   namespace comes from the instance's name, and is stored (shard-store.ts) for an instance
 *   started without one (its alarm after a restart, a deploy or an eviction), which also
 *   learns it from any delivery. A shard that knows it from none of these keeps its pending
 *   entries rather than forward them anywhere else.
 *
 * Does not: answer listings (the namespace index does) or keep what it forwarded.
 */
import { ShiftlockObject } from "../durable/object-base.ts";
import { meterMethods } from "../durable/object-meter.ts";
import { namespaceOf, objectName } from "../durable/object-names.ts";
import { DeliveryRetry } from "../durable/delivery-retry.ts";
import { addCounters, type CounterDeltas, type IndexDelivery } from "../core/listing-entry.ts";
import { ShardStore } from "./shard-store.ts";

/** How long a shard gathers deliveries before it forwards them (the listing lags by about this). */
export const FORWARD_MS = 500;
/** Most entries in one forwarded batch. */
export const FORWARD_BATCH = 500;

export class IndexShard extends ShiftlockObject {
  protected static override readonly feedsListing = false;
  private readonly store: ShardStore;
  /** The shared backoff of every delivery an object owes (durable/delivery-retry.ts). */
  private readonly retry = new DeliveryRetry(this.alarms, () => this.clock.nowMs());
  /** Counters accepted and not yet forwarded (see the module doc). */
  private counters: CounterDeltas = {};
  /** The shard's namespace (see the module doc); undefined while unknown. */
  private knownNamespace: string | undefined;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.store = new ShardStore(ctx.storage);
    this.startUp(() => {
      this.store.open();
      this.counters = this.store.takeLegacyCounters();
      const stored = this.store.namespace();
      this.knownNamespace = namespaceOf(ctx) ?? stored;
      if (this.knownNamespace !== undefined && this.knownNamespace !== stored)
        this.store.rememberNamespace(this.knownNamespace);
    });
  }

  /** From the shard's name, its `meta`, or a delivery (a shard has no outbox row). */
  protected override get namespace(): string | undefined {
    return this.knownNamespace;
  }

  /** Accept one object's delivery; forwarding follows within {@link FORWARD_MS}. */
  async apply(delivery: IndexDelivery): Promise<void> {
    if (this.knownNamespace === undefined && delivery.namespace !== undefined) {
      this.knownNamespace = delivery.namespace;
      this.store.rememberNamespace(delivery.namespace);
    }
    if (delivery.entry !== undefined) this.store.accept(delivery.entry);
    addCounters(this.counters, delivery.counters);
    await this.alarms.ensure(this.clock.nowMs() + FORWARD_MS);
  }

  /** Forward what is pending. Idempotent. */
  override async alarm(): Promise<void> {
    this.alarms.fired();
    await this.forward();
  }

  /** Forward everything pending now, in batches (the alarm; tests settle the listing with it). */
  async forward(): Promise<void> {
    if (this.knownNamespace === undefined) {
      // Never to another namespace's index: the next delivery or named start-up tells it.
      console.warn("listing forward waits: this shard has no name and no stored namespace");
      return;
    }
    const index = this.env.INDEX.getByName(objectName(this.knownNamespace, "index"));
    for (;;) {
      const entries = this.store.take(FORWARD_BATCH);
      const counters = this.counters;
      if (entries.length === 0 && Object.keys(counters).length === 0) return;
      // Counters accepted while this forward is in flight go with the next one.
      this.counters = {};
      try {
        await index.applyBatch({ entries, counters, atMs: this.clock.nowMs() });
      } catch (err) {
        addCounters(this.counters, counters);
        console.warn("listing forward failed; retrying", err);
        await this.retry.failed();
        return;
      }
      this.retry.succeeded();
      this.store.forwarded(entries);
      this.meter.add("deliveries");
    }
  }
}

meterMethods(IndexShard.prototype, ["apply", "alarm"]);
