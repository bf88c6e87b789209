/**
 * When a lease is renewed and when it is declared lost: the one rule of the client, shared
 * by the handoff runtime's claim leases (`Lease`), the generation session's lease (one
 * epoch at a time; its bound claims share its {@link LeaseDeadline}) and the coord
 * `WriteLease`.
 *
 * Guarantees:
 * - A renew (claims) or keepalive (coord, a generation's lease) is due every `intervalMs`
 *   (default ttl/3) after the *send* time of the last successful one (a lease channel's
 *   ping counts from the instant it went out).
 * - The server starts a ttl when it *receives* the request, which is no earlier than we
 *   sent it, so it keeps the lease at least until `sentAt + ttl` of the last successful
 *   renew (or acquire) — whatever the offset between the two clocks. That bound is the
 *   {@link LeaseDeadline}. The lease is declared lost at `deadline − marginMs` (default
 *   `max(ttl/10, 50 ms)`) when no renew has succeeded since: before the server can let
 *   anyone else have it, provided the local clock does not run slower than the server's by
 *   more than the margin over one ttl (the margin also absorbs timer lateness).
 * - A renew in flight is raced against that loss point and abandoned (its request aborted)
 *   when the point passes: a hanging network cannot delay the loss.
 * - A refusal (the server says the lease is gone) is a loss at once; any other failure is
 *   retried through the client's one {@link Backoff} until the loss point.
 *
 * Does not: stop a paused process from writing late (fencing is the resource's job), or
 * decide what counts as a refusal (each lease says).
 */
import { retryDelayMs } from "./transport/retry-policy.ts";
import { sleepLinked, type Clock } from "../core/clock.ts";
import { Backoff } from "./transport/backoff.ts";

/** Default renew period for a ttl: a third, so two renews can fail before the loss point. */
export function defaultRenewIntervalMs(ttlMs: number): number {
  return Math.max(1, Math.floor(ttlMs / 3));
}

/** Default margin before the server-side deadline: a tenth of the ttl, at least 50 ms. */
export function defaultSafetyMarginMs(ttlMs: number): number {
  return Math.max(Math.ceil(ttlMs / 10), 50);
}

/** The local-clock bound until which the server keeps a lease, and the loss point before it. */
export class LeaseDeadline {
  constructor(
    private readonly marginMs: number,
    private boundMs: number,
  ) {}

  /** The server keeps the lease at least until then (local clock, epoch ms). */
  get deadlineMs(): number {
    return this.boundMs;
  }

  /** Without a successful renew, the lease is declared lost at this instant. */
  get lossAtMs(): number {
    return this.boundMs - this.marginMs;
  }

  /**
   * A renew sent at `sentAtMs` for `ttlMs` succeeded. The bound is replaced, not maximised:
   * the server set expiry to its now + ttl, which may shorten an earlier, longer one.
   */
  confirmed(sentAtMs: number, ttlMs: number): void {
    this.boundMs = sentAtMs + ttlMs;
  }
}

export interface KeepAliveOptions<T> {
  clock: Clock;
  deadline: LeaseDeadline;
  intervalMs: number;
  /** When the first renew is due (local clock). */
  firstAtMs: number;
  /** Ends the loop quietly (release, handoff, close); aborts a renew in flight. */
  stop: AbortSignal;
  /** The ttl the next renew asks for. */
  ttlMs(): number;
  /** One renew; `signal` aborts when the loss point passes first or the loop stops. */
  send(ttlMs: number, signal: AbortSignal): Promise<T>;
  /**
   * When the keepalive `value` confirms was sent, if not when `send` was called (a lease
   * channel's ping may have gone out just before). Must be no later than the server
   * received it.
   */
  sentAtOf?(value: T): number;
  /** True for an answer that proves the lease is gone. */
  isRefusal(err: unknown): boolean;
  /** A renew succeeded (the deadline has moved); return an error to declare a loss instead. */
  renewed(value: T, sentAtMs: number): Error | undefined;
  /** A renew failed for a reason worth retrying. */
  failed?(error: unknown): void;
  /** While true no renew is sent and a refusal is no loss (a handoff's commit decides). */
  paused?(): boolean;
  /**
   * The lease is lost: `refused` when the server refused (or contradicted) it, false when
   * the loss point passed without a successful renew (the server may still hold it).
   */
  lost(error: Error, refused: boolean): void;
  /** The error of a loss at the loss point. */
  deadlineError(): Error;
}

type Attempt<T> =
  | { kind: "ok"; value: T; sentAtMs: number }
  | { kind: "refused"; error: Error }
  | { kind: "transient"; error: unknown }
  | { kind: "deadline" };

/**
 * The renew loop of one lease; resolves when the lease is lost or `stop` aborts (never
 * rejects):
 * 1. sleep until the next renew or the loss point, whichever is first;
 * 2. past the loss point: lost;
 * 3. renew, racing the call against the loss point;
 * 4. success moves the deadline to send time + ttl; a refusal is a loss; any other failure
 *    retries after a backoff.
 */
export async function keepAlive<T>(o: KeepAliveOptions<T>): Promise<void> {
  const retry = new Backoff({ minMs: Math.min(50, o.intervalMs / 4), maxMs: Math.max(50, o.intervalMs / 2) });
  let nextAtMs = o.firstAtMs;
  for (;;) {
    if (o.stop.aborted) return;
    const now = o.clock.nowMs();
    const lossAtMs = o.deadline.lossAtMs;
    if (now >= lossAtMs) return o.lost(o.deadlineError(), false);
    if (now < nextAtMs) {
      try {
        await sleepLinked(o.clock, Math.min(nextAtMs, lossAtMs) - now, o.stop);
      } catch {
        return; // stopped
      }
      continue;
    }
    if (o.paused?.() === true) {
      nextAtMs = now + o.intervalMs;
      continue;
    }
    const ttlMs = o.ttlMs();
    const attempt = await renewBefore(o, ttlMs, lossAtMs);
    if (o.stop.aborted) return;
    if (attempt.kind === "ok") {
      o.deadline.confirmed(attempt.sentAtMs, ttlMs);
      const contradiction = o.renewed(attempt.value, attempt.sentAtMs);
      if (contradiction !== undefined) return o.lost(contradiction, true);
      retry.reset();
      nextAtMs = attempt.sentAtMs + o.intervalMs;
    } else if (attempt.kind === "refused") {
      if (o.paused?.() === true) continue;
      return o.lost(attempt.error, true);
    } else if (attempt.kind === "transient") {
      o.failed?.(attempt.error);
      nextAtMs = o.clock.nowMs() + retryDelayMs(attempt.error, retry);
    }
    // "deadline": the loop re-checks the loss point.
  }
}

/** One renew raced against the loss point; leaves no request or timer behind. */
async function renewBefore<T>(o: KeepAliveOptions<T>, ttlMs: number, lossAtMs: number): Promise<Attempt<T>> {
  const sentAtMs = o.clock.nowMs();
  const attempt = new AbortController();
  const onStop = (): void => attempt.abort(o.stop.reason);
  o.stop.addEventListener("abort", onStop, { once: true });
  try {
    const call = o.send(ttlMs, attempt.signal).then(
      (value): Attempt<T> => ({ kind: "ok", value, sentAtMs: o.sentAtOf?.(value) ?? sentAtMs }),
      (error: unknown): Attempt<T> =>
        o.isRefusal(error) ? { kind: "refused", error: error as Error } : { kind: "transient", error },
    );
    const timer = o.clock.sleep(lossAtMs - sentAtMs, attempt.signal).then(
      (): Attempt<T> => ({ kind: "deadline" }),
      (): Attempt<T> => ({ kind: "deadline" }),
    );
    return await Promise.race([call, timer]);
  } finally {
    attempt.abort();
    o.stop.removeEventListener("abort", onStop);
  }
}
