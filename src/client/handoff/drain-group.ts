/**
 * DrainGroup: counts in-flight units of work so a handoff can stop new work and wait for
 * the rest to finish.
 *
 * Guarantees:
 * - While draining (or closed), `begin()` refuses new work with `invalid_state`
 *   (`details.reason` `draining` / `closed`); work already begun is unaffected.
 * - `wait()` resolves once no work is in flight, or rejects on timeout (measured on the
 *   injected clock) or when the signal aborts.
 * - `reopen()` ends a drain: an aborted handoff lets the generation take work again (the Go
 *   reference stayed draining forever, its §5.14).
 * - Every `end` function is idempotent: calling it twice does not under-count.
 *
 * Does not: cancel work in flight; the handoff only waits for it.
 */
import type { Clock } from "../../core/clock.ts";
import { ShiftlockError } from "../../protocol/errors.ts";

export class DrainGroup {
  private inFlight = 0;
  private drainingNow = false;
  private closedNow = false;
  private idleWaiters: (() => void)[] = [];

  /** Units of work in flight. */
  get active(): number {
    return this.inFlight;
  }

  /** True between `startDrain()` and `reopen()`. */
  get draining(): boolean {
    return this.drainingNow;
  }

  /**
   * Start one unit of work; call the returned function when it ends.
   * @throws ShiftlockError `invalid_state` while draining or after close.
   */
  begin(): () => void {
    if (this.closedNow) throw new ShiftlockError("invalid_state", "generation is closed", { reason: "closed" });
    if (this.drainingNow) throw new ShiftlockError("invalid_state", "draining in progress", { reason: "draining" });
    this.inFlight++;
    let ended = false;
    return () => {
      if (ended) return;
      ended = true;
      this.inFlight--;
      if (this.inFlight === 0) this.wakeIdle();
    };
  }

  /** Like {@link begin}, but `undefined` instead of throwing when new work is refused. */
  tryBegin(): (() => void) | undefined {
    return this.closedNow || this.drainingNow ? undefined : this.begin();
  }

  /** Run `fn` as one unit of work. */
  async run<T>(fn: () => Promise<T> | T): Promise<T> {
    const end = this.begin();
    try {
      return await fn();
    } finally {
      end();
    }
  }

  /** Refuse new work from now on (until {@link reopen}). */
  startDrain(): void {
    this.drainingNow = true;
  }

  /** Accept new work again (after an aborted handoff). */
  reopen(): void {
    this.drainingNow = false;
  }

  /** Refuse new work for good. */
  close(): void {
    this.closedNow = true;
    this.drainingNow = true;
  }

  /**
   * Start draining and wait until nothing is in flight.
   * @param timeoutMs give up after this long (on `clock`); rejects with `invalid_state`, `details.reason` `drain_timeout`.
   */
  async wait(clock: Clock, timeoutMs: number, signal?: AbortSignal): Promise<void> {
    this.startDrain();
    if (this.inFlight === 0) return;
    const stop = new AbortController();
    const onAbort = (): void => stop.abort(signal?.reason);
    signal?.addEventListener("abort", onAbort, { once: true });
    try {
      const idle = new Promise<"idle">((resolve) => this.idleWaiters.push(() => resolve("idle")));
      const timer = clock.sleep(timeoutMs, stop.signal).then(
        () => "timeout" as const,
        () => "aborted" as const,
      );
      const outcome = await Promise.race([idle, timer]);
      if (outcome === "timeout") {
        throw new ShiftlockError(
          "invalid_state",
          `drain timed out after ${timeoutMs} ms with ${this.inFlight} in flight`,
          {
            reason: "drain_timeout",
            inFlight: this.inFlight,
          },
        );
      }
      if (outcome === "aborted") throw signal?.reason as Error;
    } finally {
      stop.abort();
      signal?.removeEventListener("abort", onAbort);
    }
  }

  private wakeIdle(): void {
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const wake of waiters) wake();
  }
}
