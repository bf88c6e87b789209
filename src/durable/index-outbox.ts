/**
 * The outbox that feeds a namespace's listing (docs/listing.md): shared by the claim,
 * generation and scope objects.
 *
 * Guarantees:
 * - {@link IndexOutbox.stage} runs INSIDE the mutation's own transaction and writes one row
 *   (`index_outbox`, id 1): the object's latest listing entry and a sequence number that
 *   grows by one per staged change. The entry commits with the mutation or not at all.
 * - Only what the listing shows is staged: a change that moves nothing but a deadline (a
 *   renewal, a keepalive, an acquire that extends the caller's own claim) stages nothing and
 *   so costs no delivery (docs/protocol.md: listed deadlines may trail renewals).
 * - Delivery never sits on the mutation's path: {@link IndexOutbox.kick} starts it after the
 *   commit and nobody awaits it but the runtime (`waitUntil`). It goes to ONE listing shard,
 *   chosen by the object's key (core/listing-shard.ts), never to a namespace-wide object.
 *   Deliveries coalesce: a kicked delivery waits {@link COALESCE_MS} for more commits; while
 *   one is in flight further commits only mark the outbox dirty.
 * - The highest delivered seq is written back to the row (one row per delivery, not per
 *   mutation), so a restarted instance — after a deploy, an eviction — re-sends nothing that
 *   arrived: restarts cause no delivery storm.
 * - Delivery never depends on how the instance was started. The runtime names an instance
 *   (`ctx.id.name`) only when a named call starts it; one it starts by itself — the alarm
 *   after a restart, a deploy or an eviction — has no name. The row keeps the object's
 *   namespace (written with every staged entry), so such an instance stages, delivers and
 *   counts exactly as a named one: an expiry that fell due while the runtime was down, and
 *   anything an earlier instance left undelivered, reach the shard from that alarm.
 * - Should this instance die before delivering, the object's one alarm delivers: every
 *   staged change arms it {@link DELIVERY_CHECK_MS} after the change at the latest (only ever
 *   moved earlier; the mutation arms the earlier of that and its own deadline with one write),
 *   so what a crash cut off is listed within the bound whatever the object's deadline — a
 *   bound claim has none, and a held claim's expiry may be a day away. A failed delivery is retried from the same alarm with backoff from
 *   250 ms to 30 s (the shared rule of delivery-retry.ts). Nothing else wakes the object: once
 *   everything is delivered, the outbox costs nothing.
 * - Counters (acquires, refusals by code, expiries, …) are kept in memory and travel with
 *   the next delivery of an entry; they never cause a delivery of their own. A crash loses
 *   the increments not yet delivered (they are statistics; Analytics Engine gets them at once).
 * - `LISTING_INDEX = "off"` disables staging and delivery entirely (the bench's switch).
 *
 * Does not: make the listing exact. The objects are the truth; the listing may lag them.
 * Nor deliver a row whose namespace is unknown: one staged by a version that did not store
 * it, read by an instance started without a name. That row stays until the object's next
 * named start-up, which stores the namespace and delivers it (never to another namespace).
 */
import { systemClock } from "../core/clock.ts";
import { listingShardCount, listingShardOf } from "../core/listing-shard.ts";
import { namespaceOf, objectName } from "./object-names.ts";
import type { CounterDeltas, IndexDelivery, IndexEntry } from "../core/listing-entry.ts";
import { addCounters, listedFingerprint } from "../core/listing-entry.ts";
import type { AlarmSchedule } from "./alarm-schedule.ts";
import { DELIVERY_CHECK_MS, DeliveryRetry } from "./delivery-retry.ts";
import { writeCounter } from "./metrics.ts";
import type { ObjectMeter } from "./object-meter.ts";
import type { ObjectSettings } from "./object-settings.ts";

/** Appended to every feeding store's migrations: the one outbox row. */
export const OUTBOX_MIGRATION = `CREATE TABLE IF NOT EXISTS index_outbox (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  seq INTEGER NOT NULL,
  entry TEXT NOT NULL
)`;

/** Appended after {@link OUTBOX_MIGRATION}: the highest seq a shard acknowledged. */
export const OUTBOX_DELIVERED_MIGRATION = `ALTER TABLE index_outbox ADD COLUMN delivered_seq INTEGER NOT NULL DEFAULT 0`;

/**
 * Appended after {@link OUTBOX_DELIVERED_MIGRATION}: the object's namespace, for an instance
 * the runtime started without a name ("" in rows staged before it was stored).
 */
export const OUTBOX_NAMESPACE_MIGRATION = `ALTER TABLE index_outbox ADD COLUMN namespace TEXT NOT NULL DEFAULT ''`;

/**
 * How long a kicked delivery waits for more commits to coalesce with: a transfer's prepare
 * and commit (one client round trip apart, up to ≈ 500 ms), or a burst on one object, cost
 * one delivery, and no delivery lands among the commits of a batch hand-over. The lag grows
 * by at most this: with the shard's 500 ms it stays inside the listing's 2 s.
 */
export const COALESCE_MS = 600;

// DELIVERY_CHECK_MS (delivery-retry.ts) is later than COALESCE_MS: the alarm never
// pre-empts the coalesced delivery, and the listing's lag bound (2 s) holds.

/** True unless `LISTING_INDEX` is "off". */
export function listingEnabled(env: Env): boolean {
  return (env as { LISTING_INDEX?: string }).LISTING_INDEX !== "off";
}

type OutboxRow = {
  seq: number;
  entry: string;
  delivered_seq: number;
  namespace: string;
};

export class IndexOutbox {
  /** False when the listing is switched off, and for the listing's own objects. */
  readonly enabled: boolean;
  /** From the instance's name, else from the row (see the module doc); undefined until known. */
  private knownNamespace: string | undefined;
  /** The instance has a name: a row staged before the namespace was stored gets it. */
  private readonly named: boolean;
  private readonly shards: number;
  private pending: CounterDeltas = {};
  private inFlight: Promise<void> | undefined;
  /** Ends the coalescing window of the delivery in flight early (see {@link flush}). */
  private hurry: AbortController | undefined;
  private dirty = false;
  /** The shared backoff of every delivery an object owes (delivery-retry.ts). */
  private readonly retry: DeliveryRetry;
  /** The highest seq known delivered (loaded from the row on first use). */
  private deliveredSeq: number | undefined;
  /** The listed fields of the last staged entry (loaded from the row on first use). */
  private lastListed: string | undefined;
  /** A change was staged since the last {@link kick}: the safety alarm must be armed. */
  private stagedSinceKick = false;
  /** The table exists (created by the store's migrations, so known only after a write or a read). */
  private hasRow: boolean | undefined;

  constructor(
    private readonly ctx: DurableObjectState,
    private readonly env: Env,
    /**
     * The object's settings, read at each use: its clock, and `holdIndexDelivery` (stage and
     * arm, send nothing) (object-settings.ts).
     */
    private readonly settings: Pick<ObjectSettings, "clock" | "holdIndexDelivery">,
    private readonly alarms: AlarmSchedule,
    private readonly meter: ObjectMeter,
    /** The object's kind feeds the listing (claims, generations, scopes; not the listing's own). */
    feeds: boolean,
  ) {
    this.knownNamespace = namespaceOf(ctx);
    this.named = this.knownNamespace !== undefined;
    this.shards = listingShardCount((env as { LISTING_SHARDS?: string }).LISTING_SHARDS);
    this.enabled = listingEnabled(env) && feeds;
    this.retry = new DeliveryRetry(alarms, () => this.settings.clock.nowMs());
  }

  /**
   * Write the object's latest entry if anything the listing shows changed. Call INSIDE the
   * mutation's transaction. One row written, or none.
   */
  stage(entry: IndexEntry): void {
    if (!this.enabled) return;
    const listed = listedFingerprint(entry);
    if (this.lastListed === undefined) this.lastListed = this.read()?.listed ?? "";
    if (listed === this.lastListed) return;
    // The namespace is known here unless neither the name nor the row has it (a legacy row
    // read by an unnamed instance): then the stored one ("") stays.
    this.ctx.storage.sql.exec(
      `INSERT INTO index_outbox (id, seq, entry, namespace) VALUES (1, 1, ?, ?)
       ON CONFLICT (id) DO UPDATE SET seq = seq + 1, entry = excluded.entry,
         namespace = COALESCE(NULLIF(excluded.namespace, ''), namespace)`,
      JSON.stringify(entry),
      this.knownNamespace ?? "",
    );
    this.lastListed = listed;
    this.hasRow = true;
    this.stagedSinceKick = true;
  }

  /**
   * The object's namespace: from the instance's name, else from the row (an instance the
   * runtime started without a name). Undefined when neither has it: the listing is off (no
   * row), or the row was staged by a version that did not store it.
   */
  namespace(): string | undefined {
    if (this.knownNamespace === undefined && this.enabled) this.read();
    return this.knownNamespace;
  }

  /**
   * The transaction {@link stage} ran in rolled back: forget what this instance believed it
   * staged, so that the next stage compares with the row as stored, not with an entry that
   * never committed.
   */
  rolledBack(): void {
    this.lastListed = undefined;
    this.hasRow = undefined;
    this.stagedSinceKick = false;
  }

  /**
   * Add to a counter: written to Analytics Engine at once when `METRICS` is bound, and
   * carried to the listing (for the stats route) by the next delivery of an entry.
   */
  count(name: keyof CounterDeltas, n = 1): void {
    if (n <= 0) return;
    // An unnamed instance learns its namespace from the row (counted changes follow a commit).
    writeCounter(this.env, this.namespace() ?? "", name, n);
    if (!this.enabled) return;
    this.pending[name] = (this.pending[name] ?? 0) + n;
  }

  /**
   * After a commit: start delivering what was staged (not awaited: the runtime's) and return
   * the safety alarm's write for the caller to await with its own: armed
   * {@link DELIVERY_CHECK_MS} ahead when something was staged (a no-op when the mutation
   * already armed it, see {@link deliveryCheckAtMs}). Synchronous up to the returned promise.
   */
  kick(): Promise<void> {
    if (!this.enabled) return Promise.resolve();
    const staged = this.stagedSinceKick;
    this.stagedSinceKick = false;
    // Nothing staged here, and nothing an earlier instance left undelivered: nothing to do
    // (a renewal ends here without reading the row).
    if (!staged && (this.deliveredSeq !== undefined || this.undelivered() === undefined)) return Promise.resolve();
    // The delivery is the runtime's (`waitUntil` in start) and never rejects.
    void this.start(COALESCE_MS);
    return staged ? this.alarms.ensure(this.settings.clock.nowMs() + DELIVERY_CHECK_MS) : Promise.resolve();
  }

  /**
   * When the alarm must make sure what this step staged left ({@link DELIVERY_CHECK_MS} from
   * now), or undefined when it staged nothing. The mutation arms its alarm for the earlier of
   * this and its deadline, so one alarm write serves both.
   */
  deliveryCheckAtMs(): number | undefined {
    return this.enabled && this.stagedSinceKick ? this.settings.clock.nowMs() + DELIVERY_CHECK_MS : undefined;
  }

  /** Start a delivery unless one is in flight (then mark dirty). Undefined when none can run. */
  private start(delayMs: number): Promise<void> | undefined {
    if (!this.enabled || this.settings.holdIndexDelivery) return undefined;
    if (this.inFlight !== undefined) {
      this.dirty = true;
      return this.inFlight;
    }
    // A delivery is an entry point of its own for the meter: its RPC and its row count there.
    const run = this.meter.run("delivery", () => this.drain(delayMs));
    this.inFlight = run;
    this.ctx.waitUntil(run);
    return run;
  }

  /**
   * Deliver what is pending and wait for it (the alarm, which is the delivery's retry; tests).
   * A delivery still in its coalescing window goes at once: an alarm that waited out the
   * window would hold its own end (and, locally, the frames it published) for that long.
   */
  async flush(): Promise<void> {
    if (!this.enabled) return;
    // Delivered (or its retry armed) below: no safety alarm is needed for what is staged now.
    this.stagedSinceKick = false;
    this.hurry?.abort();
    // A delivery in flight may have read the row before the latest commit: wait, then go again.
    if (this.inFlight !== undefined) await this.inFlight;
    await this.start(0);
  }

  /** Deliver until nothing new was committed meanwhile. Never rejects. */
  private async drain(delayMs: number): Promise<void> {
    try {
      // Commits within the window share one delivery. A real timer on purpose: the window is
      // a cost control, not a deadline of the object's clock.
      if (delayMs > 0) {
        this.hurry = new AbortController();
        await systemClock.sleep(delayMs, this.hurry.signal).catch(() => {});
        this.hurry = undefined;
      }
      do {
        this.dirty = false;
        await this.deliverOnce();
      } while (this.dirty && !this.settings.holdIndexDelivery);
    } finally {
      this.inFlight = undefined;
    }
  }

  /** The outbox row, with its entry's listed fields; undefined when there is none (or no table). */
  private read(): { row: OutboxRow; listed: string } | undefined {
    if (this.hasRow === false) return undefined;
    let row: OutboxRow | undefined;
    try {
      row = this.ctx.storage.sql
        .exec<OutboxRow>("SELECT seq, entry, delivered_seq, namespace FROM index_outbox WHERE id = 1")
        .toArray()[0];
    } catch {
      // No table yet: a lazy store that was never written.
      this.hasRow = false;
      return undefined;
    }
    this.hasRow = row !== undefined;
    if (row === undefined) return undefined;
    if (row.namespace !== "") this.knownNamespace ??= row.namespace;
    else if (this.named) {
      // Staged before the namespace was stored: store it now, once, for unnamed instances to come.
      this.ctx.storage.sql.exec("UPDATE index_outbox SET namespace = ? WHERE id = 1", this.knownNamespace);
    }
    this.deliveredSeq = Math.max(this.deliveredSeq ?? 0, row.delivered_seq);
    const listed = listedFingerprint(JSON.parse(row.entry) as IndexEntry);
    // The row holds the last staged entry: the next stage compares with it without reading again.
    this.lastListed ??= listed;
    return { row, listed };
  }

  private undelivered(): OutboxRow | undefined {
    if (this.hasRow === false) return undefined;
    const row = this.read()?.row;
    return row === undefined || (this.deliveredSeq ?? 0) >= row.seq ? undefined : row;
  }

  private async deliverOnce(): Promise<void> {
    const row = this.undelivered();
    if (row === undefined) return;
    const namespace = this.namespace();
    if (namespace === undefined) {
      // Never to another namespace's shard: the object's next named start-up sends it.
      console.warn("listing delivery waits: this instance has no name and its row no namespace");
      return;
    }
    const entry = JSON.parse(row.entry) as IndexEntry;
    const counters = this.pending;
    this.pending = {};
    const delivery: IndexDelivery = {
      namespace,
      entry: { seq: row.seq, value: entry },
      counters,
      atMs: this.settings.clock.nowMs(),
    };
    const shard = listingShardOf(entry.kind, entry.key, this.shards);
    try {
      await this.env.INDEX_SHARDS.getByName(objectName(namespace, "index-shard", String(shard))).apply(delivery);
    } catch (err) {
      // Put the counters back (no second Analytics Engine write) and retry from the alarm
      // (only ever moved earlier).
      addCounters(this.pending, counters);
      console.warn("listing delivery failed; retrying", err);
      await this.retry.failed();
      return;
    }
    this.meter.add("deliveries");
    this.retry.succeeded();
    this.deliveredSeq = Math.max(this.deliveredSeq ?? 0, row.seq);
    this.ctx.storage.sql.exec(
      "UPDATE index_outbox SET delivered_seq = ? WHERE id = 1 AND delivered_seq < ?",
      row.seq,
      row.seq,
    );
  }
}
