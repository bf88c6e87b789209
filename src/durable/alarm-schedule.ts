/**
 * The one alarm of a Durable Object, kept no later than the earliest deadline it serves.
 *
 * Guarantees:
 * - After {@link AlarmSchedule.ensure}, an alarm is armed at or before the given deadline.
 *   The alarm is only ever moved *earlier*: a deadline that moved later (a renew, a
 *   keepalive) and a deadline that vanished (a release) leave the armed alarm alone. It
 *   then fires early or for nothing, and the handler, which is idempotent and recomputes
 *   from the saved state, re-arms for what is due. Each alarm write costs a durable write
 *   of the runtime's alarm index (an fsync locally; docs/BENCHMARKS.md), so the most
 *   frequent mutations of a lease service, renewals, pay for none.
 * - Decisions are synchronous against an in-memory mirror of the armed time, loaded once
 *   before the object serves anything, so concurrent mutations cannot reorder alarm writes.
 *
 * Does not: make alarms exact or trusted. Expiry is also applied lazily on every access.
 */
export class AlarmSchedule {
  /** The armed alarm as this instance knows it; null when none is armed. */
  private armedAtMs: number | null = null;

  /** `onWrite` is told of every alarm write (the object meter counts them). */
  constructor(
    private readonly storage: DurableObjectStorage,
    private readonly onWrite: () => void = () => {},
  ) {}

  /** Read the armed alarm. Call once, inside `blockConcurrencyWhile`, at construction. */
  async load(): Promise<void> {
    this.armedAtMs = await this.storage.getAlarm();
  }

  /**
   * Make sure an alarm fires no later than `deadlineMs` (undefined: nothing is due). Call
   * right after the save, before any await; await the result afterwards.
   */
  ensure(deadlineMs: number | undefined): Promise<void> {
    if (deadlineMs === undefined) return Promise.resolve();
    if (this.armedAtMs !== null && this.armedAtMs <= deadlineMs) return Promise.resolve();
    this.armedAtMs = deadlineMs;
    this.onWrite();
    return this.storage.setAlarm(deadlineMs);
  }

  /** The alarm fired (the runtime disarms it): call first thing in `alarm()`. */
  fired(): void {
    this.armedAtMs = null;
  }
}
