/**
 * The outbox that feeds a namespace's listing index (docs/protocol.md#listing, docs/listing.md):
 * shared by the claim, generation and scope objects.
 *
 * Guarantees:
 * - {@link IndexOutbox.stage} runs INSIDE the mutation's own transaction and writes one row
 *   (`index_outbox`, id 1): the object's latest listing entry and a sequence number that
 *   grows by one per commit. The entry therefore commits with the mutation or not at all.
 * - Delivery never sits on the mutation's path: {@link IndexOutbox.kick} starts it after
 *   the commit and nobody awaits it but the runtime (`waitUntil`). Deliveries coalesce: a
 *   kicked delivery waits {@link COALESCE_MS} for more commits, and while one is in flight,
 *   further commits only mark the outbox dirty, and one more delivery then carries the latest
 *   entry (intermediate states are skipped; the index needs only the last).
 * - A failed delivery is retried from the object's one alarm ({@link AlarmSchedule}: only
 *   ever moved earlier), with backoff from {@link RETRY_FIRST_MS} to {@link RETRY_MAX_MS}.
 *   What was delivered is remembered in memory only (no commit per delivery): an instance
 *   that starts with a row sends it once (the index ignores a seq it holds), and so does
 *   every alarm, so a crash between commit and delivery costs lag until the object next
 *   wakes (its next request, its expiry alarm, or the index's reconciliation; docs/listing.md).
 * - Counters (acquires, refusals by code, expiries, …) are kept in memory and travel with the
 *   next delivery; a crash loses the increments not yet delivered (they are statistics).
 * - `LISTING_INDEX = "off"` disables staging and delivery entirely (the bench's switch).
 *
 * Does not: make the index exact. The objects are the truth; the index may lag them.
 */
import { type Clock, systemClock } from "../core/clock.ts";
import { objectName } from "./object-names.ts";
import type { CounterDeltas, IndexDelivery, IndexEntry } from "../listing/delivery.ts";
import type { AlarmSchedule } from "./alarm-schedule.ts";
import { writeCounter } from "./metrics.ts";

/** Appended to every feeding store's migrations: the one outbox row. */
export const OUTBOX_MIGRATION = `CREATE TABLE IF NOT EXISTS index_outbox (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  seq INTEGER NOT NULL,
  entry TEXT NOT NULL
)`;

/**
 * How long a kicked delivery waits for more commits to coalesce with. Without it every commit
 * of a busy object costs a delivery and an acknowledging commit (an fsync) of its own; with it
 * a busy object delivers at most ~5 times a second and the lag grows by at most this much.
 */
export const COALESCE_MS = 200;

/** First retry delay after a failed delivery. */
export const RETRY_FIRST_MS = 250;
/** Longest retry delay. */
export const RETRY_MAX_MS = 30_000;

/** The namespace and kind of an object, from its own name (`["ns", kind, …]`, ADR 0003). */
export function identityOf(ctx: DurableObjectState): { namespace: string; kind: string } | undefined {
  const name = ctx.id.name;
  if (name === undefined) return undefined;
  try {
    const parsed = JSON.parse(name) as unknown;
    if (!Array.isArray(parsed) || typeof parsed[0] !== "string" || typeof parsed[1] !== "string") return undefined;
    return { namespace: parsed[0], kind: parsed[1] };
  } catch {
    return undefined;
  }
}

/** True unless `LISTING_INDEX` is "off". */
export function listingEnabled(env: Env): boolean {
  return (env as { LISTING_INDEX?: string }).LISTING_INDEX !== "off";
}

export class IndexOutbox {
  /** False when the index is switched off, for the index itself, or without a namespace in the name. */
  readonly enabled: boolean;
  /** Tests: stage without delivering, to measure the mutation alone. */
  paused = false;
  private readonly namespace: string;
  private pending: CounterDeltas = {};
  private inFlight: Promise<void> | undefined;
  private dirty = false;
  private retryMs = RETRY_FIRST_MS;
  /** The highest seq this instance delivered (0 at start-up: the row is sent once). */
  private deliveredSeq = 0;
  /** The table exists (created by the store's migrations, so known only after a write or a start-up read). */
  private hasRow: boolean | undefined;

  constructor(
    private readonly ctx: DurableObjectState,
    private readonly env: Env,
    private readonly clock: () => Clock,
    private readonly alarms: AlarmSchedule,
  ) {
    const identity = identityOf(ctx);
    this.namespace = identity?.namespace ?? "";
    // The index does not feed itself; an object without a parsable name has no namespace.
    this.enabled = listingEnabled(env) && identity !== undefined && identity.kind !== "index";
  }

  /** Write the object's latest entry. Call INSIDE the mutation's transaction. One row written. */
  stage(entry: IndexEntry): void {
    if (!this.enabled) return;
    this.ctx.storage.sql.exec(
      `INSERT INTO index_outbox (id, seq, entry) VALUES (1, 1, ?)
       ON CONFLICT (id) DO UPDATE SET seq = seq + 1, entry = excluded.entry`,
      JSON.stringify(entry),
    );
    this.hasRow = true;
  }

  /**
   * Add to a counter: written to Analytics Engine at once when `METRICS` is bound, and
   * carried to the index (for the stats route) by the next delivery.
   */
  count(name: keyof CounterDeltas, n = 1): void {
    if (n <= 0) return;
    writeCounter(this.env, this.namespace, name, n);
    if (!this.enabled) return;
    this.pending[name] = (this.pending[name] ?? 0) + n;
  }

  /** Put undelivered counters back (a failed delivery): no second Analytics Engine write. */
  private restore(counters: CounterDeltas): void {
    for (const [name, n] of Object.entries(counters)) {
      const key = name as keyof CounterDeltas;
      this.pending[key] = (this.pending[key] ?? 0) + (n ?? 0);
    }
  }

  /**
   * Start delivering after a commit (or a counted refusal). Not awaited by the caller: the
   * delivery belongs to the runtime (`waitUntil`). Synchronous.
   */
  kick(): void {
    // The delivery is the runtime's (`waitUntil` in start) and never rejects.
    void this.start(COALESCE_MS);
  }

  /** {@link kick}, returning the delivery in flight (undefined when none can run). */
  private start(delayMs: number): Promise<void> | undefined {
    if (!this.enabled || this.paused) return undefined;
    if (this.inFlight !== undefined) {
      this.dirty = true;
      return this.inFlight;
    }
    const run = this.drain(delayMs);
    this.inFlight = run;
    this.ctx.waitUntil(run);
    return run;
  }

  /** Deliver what is pending and wait for it (alarm, start-up, reconciliation, tests). */
  async flush(): Promise<void> {
    if (!this.enabled) return;
    // A delivery in flight may have read the row before the latest commit: wait, then go again.
    if (this.inFlight !== undefined) await this.inFlight;
    await this.start(0);
  }

  /** Deliver until nothing new was committed meanwhile. Never rejects. */
  private async drain(delayMs: number): Promise<void> {
    try {
      // Commits within the window share one delivery (and one acknowledging commit). A real
      // timer on purpose: the window is a cost control, not a deadline of the object's clock.
      if (delayMs > 0) await systemClock.sleep(delayMs);
      do {
        this.dirty = false;
        await this.deliverOnce();
      } while (this.dirty && !this.paused);
    } finally {
      this.inFlight = undefined;
    }
  }

  private undelivered(): { seq: number; entry: string } | undefined {
    if (this.hasRow === false) return undefined;
    let row: { seq: number; entry: string } | undefined;
    try {
      row = this.ctx.storage.sql
        .exec<{ seq: number; entry: string }>("SELECT seq, entry FROM index_outbox WHERE id = 1")
        .toArray()[0];
    } catch {
      // No table yet: a lazy store that was never written.
      this.hasRow = false;
      return undefined;
    }
    this.hasRow = row !== undefined;
    return row === undefined || this.deliveredSeq >= row.seq ? undefined : row;
  }

  private async deliverOnce(): Promise<void> {
    const row = this.undelivered();
    const counters = this.pending;
    if (row === undefined && Object.keys(counters).length === 0) return;
    this.pending = {};
    const delivery: IndexDelivery = { counters, atMs: this.clock().nowMs() };
    if (row !== undefined) delivery.entry = { seq: row.seq, value: JSON.parse(row.entry) as IndexEntry };
    try {
      await this.env.INDEX.getByName(objectName(this.namespace, "index")).apply(delivery);
    } catch (err) {
      // Put the counters back and retry from the alarm (only ever moved earlier).
      this.restore(counters);
      console.warn("index delivery failed; retrying", err);
      const retryAt = this.clock().nowMs() + this.retryMs;
      this.retryMs = Math.min(this.retryMs * 2, RETRY_MAX_MS);
      await this.alarms.ensure(retryAt);
      return;
    }
    this.retryMs = RETRY_FIRST_MS;
    // Remembered in memory only: a new instance re-sends its row once (the index ignores a
    // seq it already holds), which costs less than a commit per delivery.
    if (row !== undefined) this.deliveredSeq = Math.max(this.deliveredSeq, row.seq);
  }
}
