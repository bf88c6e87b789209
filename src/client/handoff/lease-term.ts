/**
 * One epoch of a session's lease (session-lease.ts) as the runtime holds it: its number, the
 * {@link LeaseDeadline} every claim bound to it shares, its loss signal, and what its lease
 * channel confirmed.
 *
 * Guarantees: `lost` aborts once, with the loss error as reason (the session lease aborts
 * it); {@link Term.nextHeard} only ever answers a keepalive the channel confirmed *after*
 * the one asked about, so a confirmation is never counted twice.
 *
 * Does not: decide anything (the session lease does), or read a clock of its own.
 */
import type { Clock } from "../../core/clock.ts";
import type { LeaseDeadline } from "../lease-timing.ts";

/** One epoch of the session's lease, as the claims bound to it see it. */
export interface LeaseTerm {
  readonly epoch: bigint;
  /** Shared by every lease bound to this epoch: the server keeps it at least until `deadlineMs`. */
  readonly deadline: LeaseDeadline;
  /** Aborts, with the loss error as reason, when this epoch is over for this session. */
  readonly lost: AbortSignal;
  /**
   * Calls `onLost` once with the loss error when this epoch is over (at once if it is);
   * returns how to stop listening. A session binds hundreds of claims to one epoch: they
   * share one listener on {@link lost} instead of one each.
   */
  whenLost(onLost: (error: Error) => void): () => void;
}

/** A confirmed keepalive of some epoch, and when it was sent. */
export interface Confirmation {
  epoch: bigint;
  sentAtMs: number;
  via: "channel" | "http";
}

export class Term implements LeaseTerm {
  readonly controller = new AbortController();
  /** The server said this epoch ended (its channel closes by itself then). */
  endedByServer = false;
  /** The send time of the newest keepalive the channel confirmed for this epoch. */
  private heardAtMs = Number.NEGATIVE_INFINITY;
  private readonly waiting = new Set<() => void>();
  private readonly losers = new Set<(error: Error) => void>();

  constructor(
    readonly epoch: bigint,
    readonly deadline: LeaseDeadline,
    readonly startedAtMs: number,
  ) {
    this.lost.addEventListener(
      "abort",
      () => {
        for (const onLost of [...this.losers]) onLost(this.lost.reason as Error);
        this.losers.clear();
      },
      { once: true },
    );
  }

  get lost(): AbortSignal {
    return this.controller.signal;
  }

  whenLost(onLost: (error: Error) => void): () => void {
    if (this.lost.aborted) {
      onLost(this.lost.reason as Error);
      return () => undefined;
    }
    this.losers.add(onLost);
    return () => void this.losers.delete(onLost);
  }

  /** The channel confirmed a keepalive sent at `sentAtMs`. */
  heard(sentAtMs: number): void {
    this.heardAtMs = Math.max(this.heardAtMs, sentAtMs);
    for (const wake of [...this.waiting]) wake();
  }

  /** True when the channel confirmed a keepalive sent within `withinMs` of `nowMs`. */
  channelFresh(nowMs: number, withinMs: number): boolean {
    return nowMs - this.heardAtMs <= withinMs;
  }

  /** The send time of a channel-confirmed keepalive newer than `sinceMs`, waiting up to `waitMs` for one. */
  async nextHeard(sinceMs: number, waitMs: number, clock: Clock, signal: AbortSignal): Promise<number | undefined> {
    if (this.heardAtMs > sinceMs) return this.heardAtMs;
    const timer = new AbortController();
    let wake!: () => void;
    const heard = new Promise<void>((resolve) => (wake = resolve));
    this.waiting.add(wake);
    try {
      const slept = clock.sleep(waitMs, AbortSignal.any([signal, timer.signal])).catch(() => undefined);
      await Promise.race([heard, slept]);
    } finally {
      this.waiting.delete(wake);
      timer.abort();
    }
    return this.heardAtMs > sinceMs ? this.heardAtMs : undefined;
  }
}
