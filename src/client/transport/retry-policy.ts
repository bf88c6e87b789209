/**
 * The client's one retry rule (docs/protocol.md#client-retries): which failures are worth
 * another attempt, how long to wait before it, and the loop that makes the attempts.
 * Every retrying part of the client — the HTTP transport, the handoff runtime, coord lease
 * release and re-queued waits, the CLI's claim lock — decides through this module.
 *
 * Guarantees:
 * - *Whether* a request may be repeated comes from its route's declaration
 *   (`repeatable`, src/protocol/route.ts {@link mayRepeat}): reads, keepalives, releases and
 *   any mutation carrying an `operationId`. A publish and a lease request are never sent
 *   again by this module; their callers resolve a lost answer by reading.
 * - *When*: a failure is retried only if it is a network failure (no HTTP answer), 503
 *   `overloaded` or 429 `rate_limited` ({@link isRetryable}). Any other answer is an
 *   answer; `internal` is a bug and is not retried.
 * - *How long*: each wait is drawn from the client's one jittered {@link Backoff} and is
 *   never shorter than the server's `Retry-After`; attempts stop at the call's own deadline
 *   (`untilMs` on the injected clock) or when its signal aborts. A wait that `Retry-After`
 *   pushes past the deadline is not taken: the last failure is the answer.
 *
 * Does not: sleep on wall time (the injected clock), or retry a request whose route
 * forbids it.
 */
import { type Clock, sleepLinked } from "../../core/clock.ts";
import { ShiftlockError } from "../../protocol/errors.ts";
import type { RouteSpec } from "../../protocol/route.ts";
import { mayRepeat } from "../../protocol/route.ts";
import { Backoff } from "./backoff.ts";

/** Bounds of the backoff between attempts of one call (first ceiling, largest ceiling), ms. */
export const CALL_BACKOFF = { minMs: 50, maxMs: 1_000 } as const;
/** Bounds of the backoff between re-queued coord waits, ms (a wait is long; its retries are rarer). */
export const REQUEUE_BACKOFF = { minMs: 200, maxMs: 5_000 } as const;

/** The backoff of one call's retries (`random`: a uniform [0, 1) source, for tests). */
export function callBackoff(random?: () => number): Backoff {
  return new Backoff({ ...CALL_BACKOFF, ...(random === undefined ? {} : { random }) });
}

/** The backoff between re-queued coord waits. */
export function requeueBackoff(random?: () => number): Backoff {
  return new Backoff({ ...REQUEUE_BACKOFF, ...(random === undefined ? {} : { random }) });
}

/**
 * True for a failure worth another attempt: no HTTP answer (the transport's network error,
 * or any thrown error that is not a {@link ShiftlockError} and not a cancellation), 503
 * `overloaded`, 429 `rate_limited`.
 */
export function isRetryable(err: unknown): boolean {
  if (err instanceof ShiftlockError) {
    return err.code === "overloaded" || err.code === "rate_limited" || err.details["network"] === true;
  }
  if (err instanceof Error && (err.name === "AbortError" || err.name === "TimeoutError")) return false;
  return true;
}

/** The server's `Retry-After` carried by `err`, ms (0 when none). */
export function retryAfterMsOf(err: unknown): number {
  const value = err instanceof ShiftlockError ? err.details["retryAfterMs"] : undefined;
  return typeof value === "number" && Number.isFinite(value) && value > 0 ? value : 0;
}

/** The wait before the next attempt after `err`: the backoff's, at least the server's `Retry-After`. */
export function retryDelayMs(err: unknown, backoff: Backoff): number {
  return Math.max(backoff.next(), retryAfterMsOf(err));
}

/** True when `err` from a request to `route` with `body` (wire or decoded) may be retried. */
export function mayRetry(route: RouteSpec, body: unknown, err: unknown): boolean {
  return mayRepeat(route, body) && isRetryable(err);
}

/** Where a retry loop stops. */
export interface RetryBounds {
  clock: Clock;
  /** No attempt starts at or after this instant of `clock`. */
  untilMs: number;
  signal?: AbortSignal | undefined;
  /** Uniform [0, 1) source of the jitter (tests pin it). */
  random?: (() => number) | undefined;
  /** Which failures to retry. Default {@link isRetryable}. */
  retryable?: ((err: unknown) => boolean) | undefined;
  /** Told of each failure about to be retried. */
  onRetry?: ((err: unknown) => void) | undefined;
}

/**
 * Call `attempt` until it succeeds, fails with a failure not to retry, the deadline passes
 * or the signal aborts (see the module doc). The caller has established that the request
 * may be repeated.
 */
export async function retrying<T>(bounds: RetryBounds, attempt: () => Promise<T>): Promise<T> {
  const { clock, untilMs, signal } = bounds;
  const retryable = bounds.retryable ?? isRetryable;
  const backoff = callBackoff(bounds.random);
  for (;;) {
    signal?.throwIfAborted();
    try {
      return await attempt();
    } catch (err) {
      if (!retryable(err) || signal?.aborted === true) throw err;
      const left = untilMs - clock.nowMs();
      const delay = retryDelayMs(err, backoff);
      if (left <= 0 || retryAfterMsOf(err) > left) throw err;
      bounds.onRetry?.(err);
      await sleepLinked(clock, Math.min(delay, left), signal);
    }
  }
}

/** A new signal that aborts when any input aborts (with that input's reason). */
export function anySignal(...signals: (AbortSignal | undefined)[]): AbortSignal {
  // Always a fresh signal: listeners added to it never pile up on a long-lived input.
  return AbortSignal.any(signals.filter((s): s is AbortSignal => s !== undefined));
}
