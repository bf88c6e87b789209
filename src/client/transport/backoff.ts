/**
 * The one backoff of the client: every retry loop (watch reconnects, renew and keepalive
 * retries, release retries, re-queued coord waits) waits through it.
 *
 * Guarantees: the ceiling starts at `minMs` and doubles per failure up to `maxMs`; each
 * delay is drawn from the upper half of the ceiling ("equal jitter"), so it is never more
 * than the ceiling and never less than half of it. `reset()` after a success starts over.
 * Jitter matters because failures are correlated: after a server restart or a network blip
 * every watcher and every lease of every client retries at once, and identical schedules
 * would keep hitting the server in lockstep.
 *
 * Does not: sleep (callers sleep on their injected clock) or decide what is worth retrying.
 */

export interface BackoffOptions {
  /** First ceiling, ms (> 0). */
  minMs: number;
  /** Largest ceiling, ms (≥ minMs). */
  maxMs: number;
  /** Uniform [0, 1) source; tests may pin it. Default `Math.random`. */
  random?: () => number;
}

/** Doubling past this many failures cannot raise a ceiling any further (2^30 · minMs). */
const MAX_DOUBLINGS = 30;

export class Backoff {
  private failures = 0;
  private readonly minMs: number;
  private readonly maxMs: number;
  private readonly random: () => number;

  constructor(options: BackoffOptions) {
    this.minMs = Math.max(1, options.minMs);
    this.maxMs = Math.max(this.minMs, options.maxMs);
    this.random = options.random ?? Math.random;
  }

  /** The delay before the next attempt, ms; each call counts one more failure. */
  next(): number {
    const ceiling = Math.min(this.maxMs, this.minMs * 2 ** this.failures);
    this.failures = Math.min(this.failures + 1, MAX_DOUBLINGS);
    return Math.round(ceiling / 2 + this.random() * (ceiling / 2));
  }

  /** A success: the next failure waits `minMs` (jittered) again. */
  reset(): void {
    this.failures = 0;
  }
}
