/**
 * The retry rule of every delivery an object owes another object: the listing outbox's
 * entries (index-outbox.ts), a listing shard's forward to its index (listing/index-shard.ts)
 * and a generation's lease ends (generations/lease-deliveries.ts).
 *
 * Guarantees: a commit that owes a delivery arms the alarm {@link DELIVERY_CHECK_MS} ahead; a
 * failed delivery is retried from the object's one alarm (only ever moved
 * earlier, alarm-schedule.ts), first after {@link RETRY_FIRST_MS}, doubling up to
 * {@link RETRY_MAX_MS}; a success resets the delay. Because the alarm is the retry, a
 * delivery owed survives an instance's death as long as what it delivers is in storage:
 * the alarm handler finds it there and sends it again.
 *
 * Does not: know what is delivered, or remember it (the caller's rows do).
 */
import type { AlarmSchedule } from "./alarm-schedule.ts";

/**
 * After a commit that owes a delivery, when the alarm (armed with the commit) makes sure it
 * was made: the delivery itself starts at once, and should the instance die first, this
 * alarm resumes it after the restart.
 */
export const DELIVERY_CHECK_MS = 1_000;

/** First retry delay after a failed delivery. */
export const RETRY_FIRST_MS = 250;
/** Longest retry delay. */
export const RETRY_MAX_MS = 30_000;

export class DeliveryRetry {
  private delayMs = RETRY_FIRST_MS;

  constructor(
    private readonly alarms: AlarmSchedule,
    private readonly nowMs: () => number,
  ) {}

  /** A delivery failed: arm the alarm for the next try (and back off). */
  failed(): Promise<void> {
    const retryAt = this.nowMs() + this.delayMs;
    this.delayMs = Math.min(this.delayMs * 2, RETRY_MAX_MS);
    return this.alarms.ensure(retryAt);
  }

  /** A delivery succeeded: the next failure starts from the first delay again. */
  succeeded(): void {
    this.delayMs = RETRY_FIRST_MS;
  }
}
