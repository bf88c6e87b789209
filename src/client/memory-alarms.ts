/**
 * One alarm per key on an injected {@link Clock}: the in-memory twins' stand-in for a Durable
 * Object's alarm (the memory backend's claims and generations, the memory coordinator's
 * scopes), so a `ManualClock` advanced past a deadline fires it as the object's alarm would.
 *
 * Guarantees: at most one alarm per key is pending; arming a key again replaces its alarm
 * (arming it for the instant it is already armed at changes nothing); `onFire` runs once per
 * alarm that was not replaced or cancelled. A delay longer than timers accept fires early, at
 * the longest one, and the caller's `onFire` finds nothing due and arms again. After
 * {@link close} nothing fires and nothing arms.
 *
 * Does not: decide anything at the alarm (the caller's `onFire` runs its machine).
 */
import type { Clock } from "../core/clock.ts";

/** The largest delay timers accept (2^31−1 ms). */
const MAX_TIMER_MS = 2 ** 31 - 1;

export class MemoryAlarms {
  private readonly pending = new Map<string, { atMs: number; controller: AbortController }>();
  private closed = false;

  constructor(private readonly clock: Clock) {}

  /** Arm `key`'s alarm at `atMs` to run `onFire`; undefined cancels it. */
  arm(key: string, atMs: number | undefined, onFire: () => void): void {
    const previous = this.pending.get(key);
    if (previous !== undefined && previous.atMs === atMs) return;
    previous?.controller.abort();
    this.pending.delete(key);
    if (atMs === undefined || this.closed) return;
    const armed = { atMs, controller: new AbortController() };
    this.pending.set(key, armed);
    const delayMs = Math.min(MAX_TIMER_MS, Math.max(0, atMs - this.clock.nowMs()));
    this.clock.sleep(delayMs, armed.controller.signal).then(
      () => {
        if (this.pending.get(key) !== armed) return;
        this.pending.delete(key);
        onFire();
      },
      () => undefined,
    );
  }

  /** Cancel every alarm; none arms afterwards. */
  close(): void {
    this.closed = true;
    for (const armed of this.pending.values()) armed.controller.abort();
    this.pending.clear();
  }
}
