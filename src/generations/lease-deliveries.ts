/**
 * The end of a generation's lease epoch, delivered to every claim the epoch bound
 * (docs/protocol.md#sessions).
 *
 * Guarantees:
 * - What is owed lives in storage: the `bound_claims` rows of epochs that ended
 *   (generations/store.ts). A delivery is one request to the claim's object, sent only after
 *   the commit that ended the epoch; the claim expires its hold if that epoch (or an earlier
 *   one) of this generation still binds it, and answers either way. Only its answer deletes
 *   the row, so a claim hears the end at least once, however often this object dies.
 * - Deliveries go out concurrently, at most {@link DELIVERY_CONCURRENCY} at a time, so an
 *   epoch with a hundred claims ends for all of them within a few round trips.
 * - A failed delivery is retried from the object's alarm with the shared backoff
 *   (durable/delivery-retry.ts); the alarm handler resumes whatever is owed.
 *
 * Does not: decide when an epoch ended (core/generation-lease.ts) or what a claim does with
 * the news (core/claim-machine.ts `lease_ended`).
 */
import { objectName } from "../durable/object-names.ts";
import type { DeliveryRetry } from "../durable/delivery-retry.ts";
import type { ObjectMeter } from "../durable/object-meter.ts";
import type { GenerationStore } from "./store.ts";

/** Deliveries in flight at once. */
export const DELIVERY_CONCURRENCY = 32;

export class LeaseEndDeliveries {
  private inFlight: Promise<void> | undefined;
  private again = false;

  constructor(
    private readonly ctx: DurableObjectState,
    private readonly env: Env,
    /**
     * The generation's namespace, read at each delivery (the outbox row knows it once the name
     * does not); undefined when neither knows it: nothing is sent then, never to another namespace.
     */
    private readonly namespace: () => string | undefined,
    private readonly store: GenerationStore,
    private readonly retry: DeliveryRetry,
    private readonly meter: ObjectMeter,
  ) {}

  /**
   * Deliver the end of every epoch up to `endedThrough` of generation `generationId` to the
   * claims still bound to one. Started after the commit (the runtime keeps it alive); the
   * alarm awaits it. Never rejects.
   */
  deliver(generationId: string, endedThrough: bigint): Promise<void> {
    if (this.inFlight !== undefined) {
      this.again = true;
      return this.inFlight;
    }
    const run = this.drain(generationId, endedThrough).finally(() => {
      this.inFlight = undefined;
    });
    this.inFlight = run;
    this.ctx.waitUntil(run);
    return run;
  }

  private async drain(generationId: string, endedThrough: bigint): Promise<void> {
    do {
      this.again = false;
      const owed = this.store.boundThrough(endedThrough, DELIVERY_CONCURRENCY);
      if (owed.length === 0) return;
      const namespace = this.namespace();
      if (namespace === undefined) {
        // An instance started without a name and without a listing row: the next named call
        // knows the namespace; until then the alarm retries.
        await this.retry.failed();
        return;
      }
      const results = await Promise.allSettled(
        owed.map(async ({ name, epoch }) => {
          const stub = this.env.CLAIMS.getByName(objectName(namespace, "claim", name));
          await stub.leaseEnded(name, generationId, epoch);
          this.meter.add("deliveries");
          this.store.unbind(name, epoch);
        }),
      );
      const failed = results.filter((r) => r.status === "rejected");
      if (failed.length > 0) {
        console.warn("lease end delivery failed; retrying", failed[0]);
        await this.retry.failed();
        return;
      }
      this.retry.succeeded();
      // A full batch: more may be owed.
      if (owed.length === DELIVERY_CONCURRENCY) this.again = true;
    } while (this.again);
  }
}
