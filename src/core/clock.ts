/**
 * The clock: the only place shiftlock reads wall time.
 *
 * Guarantees: everything else takes time as a parameter (`nowMs`) or a {@link Clock}, so
 * tests inject time instead of sleeping. Durable Objects use {@link systemClock} (the
 * server clock is the authority for every `…AtMs` on the wire; ADR 0002).
 */

/** Time source plus timers, injectable for deterministic tests. */
export interface Clock {
  /** Epoch milliseconds. */
  nowMs(): number;
  /**
   * Resolve after `delayMs` (or reject with the signal's reason when it aborts first).
   * A fake clock resolves when its time is advanced past the deadline.
   */
  sleep(delayMs: number, signal?: AbortSignal): Promise<void>;
}

/** The wall clock. */
export const systemClock: Clock = {
  nowMs: () => Date.now(),
  sleep: (delayMs, signal) =>
    new Promise<void>((resolve, reject) => {
      if (signal?.aborted) {
        reject(signal.reason as Error);
        return;
      }
      const onAbort = (): void => {
        clearTimeout(timer);
        reject(signal?.reason as Error);
      };
      const timer = setTimeout(
        () => {
          signal?.removeEventListener("abort", onAbort);
          resolve();
        },
        Math.max(0, delayMs),
      );
      signal?.addEventListener("abort", onAbort, { once: true });
    }),
};

/**
 * A manually advanced clock for tests. `advance(ms)` moves time forward and resolves every
 * sleeper whose deadline has passed, in deadline order.
 */
export class ManualClock implements Clock {
  private now: number;
  private sleepers: { atMs: number; resolve: () => void }[] = [];

  constructor(startMs = 1_000_000) {
    this.now = startMs;
  }

  nowMs(): number {
    return this.now;
  }

  sleep(delayMs: number, signal?: AbortSignal): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      if (signal?.aborted) {
        reject(signal.reason as Error);
        return;
      }
      const onAbort = (): void => {
        this.sleepers = this.sleepers.filter((s) => s !== entry);
        reject(signal?.reason as Error);
      };
      // Waking removes the abort listener, so a long-lived signal does not collect them.
      const entry = {
        atMs: this.now + Math.max(0, delayMs),
        resolve: () => {
          signal?.removeEventListener("abort", onAbort);
          resolve();
        },
      };
      this.sleepers.push(entry);
      signal?.addEventListener("abort", onAbort, { once: true });
    });
  }

  /** Move time forward by `ms`, waking due sleepers; yields to the microtask queue after each. */
  async advance(ms: number): Promise<void> {
    const target = this.now + ms;
    for (;;) {
      const due = this.sleepers.filter((s) => s.atMs <= target).sort((a, b) => a.atMs - b.atMs)[0];
      if (due === undefined) break;
      this.sleepers = this.sleepers.filter((s) => s !== due);
      this.now = Math.max(this.now, due.atMs);
      due.resolve();
      await flushMicrotasks();
    }
    this.now = target;
    await flushMicrotasks();
  }

  /** Number of pending sleepers (lets tests wait until a loop is parked). */
  get pendingSleepers(): number {
    return this.sleepers.length;
  }
}

/**
 * `clock.sleep` bound to `signal` through a throw-away child signal, so a long-lived signal
 * does not collect one abort listener per sleep, whatever the clock does with its listeners.
 * Without a signal it is a plain sleep.
 */
export async function sleepLinked(clock: Clock, delayMs: number, signal?: AbortSignal): Promise<void> {
  if (signal === undefined) return clock.sleep(delayMs);
  signal.throwIfAborted();
  const child = new AbortController();
  const onAbort = (): void => child.abort(signal.reason);
  signal.addEventListener("abort", onAbort, { once: true });
  try {
    await clock.sleep(delayMs, child.signal);
  } finally {
    signal.removeEventListener("abort", onAbort);
  }
}

/** Let queued promise callbacks run (several turns, so chained awaits settle). */
export async function flushMicrotasks(turns = 20): Promise<void> {
  for (let i = 0; i < turns; i++) await Promise.resolve();
}
