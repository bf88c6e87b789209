/**
 * Retry and cancellation helpers shared by the runtime's claim calls.
 *
 * Guarantees: only *transient* failures are retried (no protocol error code: network errors, and
 * `internal` / `rate_limited`); a refusal with a protocol error code (`not_owner`, `stale_token`, …)
 * is an answer and is returned at once. Retries reuse the caller's operation id, so a
 * mutation whose response was lost is applied at most once.
 *
 * Does not: retry past the given deadline, or after the signal aborts.
 */
import { type Clock, sleepLinked } from "../../core/clock.ts";
import { ShiftlockError } from "../../protocol/errors.ts";
import { Backoff } from "../transport/backoff.ts";

/** True for failures worth retrying: no answer from the service, or a server-side hiccup. */
export function isTransient(err: unknown): boolean {
  if (err instanceof ShiftlockError) return err.code === "internal" || err.code === "rate_limited";
  if (err instanceof Error && (err.name === "AbortError" || err.name === "TimeoutError")) return false;
  return true;
}

/** A new signal that aborts when any input aborts (with that input's reason). */
export function anySignal(...signals: (AbortSignal | undefined)[]): AbortSignal {
  // Always a fresh signal: listeners added to it never pile up on a long-lived input.
  return AbortSignal.any(signals.filter((s): s is AbortSignal => s !== undefined));
}

/**
 * Call `fn` until it succeeds, fails with a non-transient error, `untilMs` passes on
 * `clock`, or `signal` aborts, waiting through the client's one backoff (50 ms doubling to
 * 1 s, jittered).
 */
export async function retryTransient<T>(
  clock: Clock,
  untilMs: number,
  fn: () => Promise<T>,
  signal?: AbortSignal,
  onRetry?: (err: unknown) => void,
): Promise<T> {
  const backoff = new Backoff({ minMs: 50, maxMs: 1_000 });
  for (;;) {
    signal?.throwIfAborted();
    try {
      return await fn();
    } catch (err) {
      if (!isTransient(err) || signal?.aborted === true) throw err;
      const left = untilMs - clock.nowMs();
      if (left <= 0) throw err;
      onRetry?.(err);
      await sleepLinked(clock, Math.min(backoff.next(), left), signal);
    }
  }
}
