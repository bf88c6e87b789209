/**
 * SessionLease: the one lease of a generation session (docs/protocol.md#sessions) — one
 * epoch at a time, kept by one loop, and the loss signal every claim bound to that epoch
 * follows. etcd's `Session` keepalive, for shiftlock's generation.
 *
 * Guarantees:
 * - One keepalive loop per session, whatever the number of claims: a keepalive is due every
 *   `renewIntervalMs` (ttl/3) after the send time of the last confirmed one
 *   (client/lease-timing.ts). Over the lease channel when the backend opens one (its pings
 *   are the keepalives and cost no request); an HTTP keepalive when it cannot, or when the
 *   channel has not confirmed one within half an interval of it being due.
 * - The epoch's {@link LeaseDeadline} moves only on a confirmed keepalive: the server keeps
 *   the epoch at least until send time + ttl of the last one. A channel's opening or pong
 *   counts only when it arrived before the deadline already held (after it, the server may
 *   have ended the epoch) and only for the epoch its connection opened in.
 * - The epoch is lost — its `lost` signal aborts, and with it every lease bound to it — at
 *   deadline − margin when no keepalive was confirmed since, and at once when the server
 *   says it ended (`{"type":"ended"}`), refuses a keepalive (`generation_not_found`,
 *   `invalid_state`), or names another epoch (a new epoch binds nothing the old one held).
 * - After a loss at the deadline the server may still hold the epoch: its end is asked for
 *   (`lease/end`, best effort) before a fresh epoch starts, and an epoch this session lost is
 *   never kept again (a keepalive that answers with it ends it again first).
 * - A fresh epoch starts right after a loss (HTTP keepalive; a standby successor needs a
 *   live lease for a handoff to bind to it). A refusal stops the loop; the next {@link live}
 *   tries again.
 *
 * Does not: bind claims (session-claim.ts does, with `bound: true`; so does `shiftlock claims
 * run`), end the lease when the session closes (retiring the generation does), or outlast
 * the process.
 */
import { sleepLinked } from "../../core/clock.ts";
import { ShiftlockError, hasCode, type ErrorCode } from "../../protocol/errors.ts";
import type { LeaseChannel, LeaseChannelItem } from "../claims/claims-backend.ts";
import { LeaseDeadline, keepAlive } from "../lease-timing.ts";
import { Term, type Confirmation, type LeaseTerm } from "./lease-term.ts";
import { Backoff } from "../transport/backoff.ts";
import { anySignal, retryDelayMs, retrying } from "../transport/retry-policy.ts";
import type { ResolvedConfig } from "./config.ts";
import type { RuntimeEvents } from "./events.ts";

export type { LeaseTerm };

/** Answers that prove the generation can hold no lease now: a loss, and the loop stops. */
export const KEEPALIVE_REFUSED = ["generation_not_found", "invalid_state"] as const;
/**
 * Refusals after which trying again cannot help until something changes (`not_found`: a
 * service that predates sessions; run such sessions with `bound: false`).
 */
const PERMANENT: readonly ErrorCode[] = [
  ...KEEPALIVE_REFUSED,
  "unauthorized",
  "forbidden",
  "invalid_request",
  "not_found",
  "unsupported",
];

/** What keeping a generation's lease takes (a session's resolved config has it all). */
export type LeaseKeeping = Pick<
  ResolvedConfig,
  "backend" | "clock" | "generationId" | "leaseTtlMs" | "renewIntervalMs" | "safetyMarginMs"
>;

/** What the lease needs from its session (or the CLI that keeps one by itself). */
export interface SessionLeaseHost {
  readonly cfg: LeaseKeeping;
  /** Told `lease.started`, `lease.renewed`, `lease.lost` and the failures handled (`error`). */
  readonly events: RuntimeEvents;
}

export class SessionLease {
  private term: Term | undefined;
  /** The newest epoch this session lost: never kept again. */
  private lastLostEpoch = 0n;
  /** A newer epoch a keepalive revealed (with its send time): the next term, without another request. */
  private revealed: { epoch: bigint; sentAtMs: number } | undefined;
  private failure: Error | undefined;
  private running = false;
  private readonly stop = new AbortController();
  private readonly waiters = new Set<() => void>();

  constructor(private readonly host: SessionLeaseHost) {}

  /** The epoch held now, if it is live (before its loss point). */
  get current(): LeaseTerm | undefined {
    const term = this.term;
    if (term === undefined || term.lost.aborted) return undefined;
    return this.host.cfg.clock.nowMs() < term.deadline.lossAtMs ? term : undefined;
  }

  /** Start keeping the lease (idempotent; the session does at registration). */
  start(): void {
    if (this.running || this.stop.signal.aborted) return;
    this.running = true;
    this.failure = undefined;
    void this.run();
  }

  /**
   * A live epoch: the current one, or the next once the server confirmed it. Rejects with the
   * keepalive's refusal (`generation_not_found`, `invalid_state`, …), or `signal`'s reason.
   */
  async live(signal?: AbortSignal): Promise<LeaseTerm> {
    this.start();
    for (;;) {
      signal?.throwIfAborted();
      if (this.stop.signal.aborted) throw closedError();
      const term = this.current;
      if (term !== undefined) return term;
      if (!this.running && this.failure !== undefined) throw this.failure;
      await this.changed(signal);
    }
  }

  /** Something else proved `epoch` over (an acquire answered `no_lease` or another epoch). */
  lostEpoch(epoch: bigint, cause: Error): void {
    const term = this.term;
    if (term !== undefined && term.epoch === epoch) this.lose(term, cause);
  }

  /** Stop keeping the lease (the session closed or retired; retiring ends it on the server). */
  close(): void {
    if (this.stop.signal.aborted) return;
    this.stop.abort(closedError());
    this.term?.controller.abort(closedError());
    this.term = undefined;
    this.notify();
  }

  private async run(): Promise<void> {
    const { cfg, events } = this.host;
    const backoff = new Backoff({ minMs: 50, maxMs: Math.max(50, cfg.renewIntervalMs) });
    try {
      while (!this.stop.signal.aborted) {
        let term: Term;
        try {
          term = await this.begin();
        } catch (err) {
          if (this.stop.signal.aborted) return;
          const error = err instanceof Error ? err : new Error(String(err));
          events.emit("error", { op: "lease-keepalive", error });
          if (PERMANENT.some((code) => hasCode(err, code))) {
            this.failure = error;
            return;
          }
          try {
            await sleepLinked(cfg.clock, retryDelayMs(err, backoff), this.stop.signal);
          } catch {
            return;
          }
          continue;
        }
        backoff.reset();
        this.term = term;
        events.emit("lease.started", { epoch: term.epoch, deadlineMs: term.deadline.deadlineMs });
        this.notify();
        const atDeadline = await this.keep(term);
        if (atDeadline && !this.stop.signal.aborted) await this.endOnServer();
      }
    } finally {
      this.running = false;
      this.notify();
    }
  }

  /** Start an epoch newer than any this session lost: one HTTP keepalive (or what one revealed). */
  private async begin(): Promise<Term> {
    const { cfg } = this.host;
    for (let attempt = 0; attempt < 2; attempt++) {
      const revealed = this.revealed;
      this.revealed = undefined;
      let epoch: bigint;
      let sentAtMs: number;
      if (revealed !== undefined && revealed.sentAtMs + cfg.leaseTtlMs - cfg.safetyMarginMs > cfg.clock.nowMs()) {
        ({ epoch, sentAtMs } = revealed);
      } else {
        sentAtMs = cfg.clock.nowMs();
        const req = { id: cfg.generationId, ttlMs: cfg.leaseTtlMs };
        epoch = (await cfg.backend.keepaliveGeneration(req, { signal: this.stop.signal })).leaseEpoch;
      }
      if (epoch > this.lastLostEpoch) {
        return new Term(epoch, new LeaseDeadline(cfg.safetyMarginMs, sentAtMs + cfg.leaseTtlMs), sentAtMs);
      }
      // An epoch this session lost is still live there (its end did not get through): end it first.
      await cfg.backend.endGenerationLease(cfg.generationId, { signal: this.stop.signal });
    }
    throw new ShiftlockError("lease_lost", `generation ${cfg.generationId} keeps answering with an epoch it lost`);
  }

  /** Keep `term` until it is lost or the lease stops; true when it was lost at its deadline. */
  private async keep(term: Term): Promise<boolean> {
    const { cfg, events } = this.host;
    const stop = anySignal(term.lost, this.stop.signal);
    const channel = this.openChannel(term);
    let atDeadline = false;
    await keepAlive<Confirmation>({
      clock: cfg.clock,
      deadline: term.deadline,
      intervalMs: cfg.renewIntervalMs,
      firstAtMs: term.startedAtMs + cfg.renewIntervalMs,
      stop,
      ttlMs: () => cfg.leaseTtlMs,
      send: (ttlMs, signal) => this.keepaliveOnce(term, channel, ttlMs, signal),
      sentAtOf: (c) => c.sentAtMs,
      isRefusal: (err) => KEEPALIVE_REFUSED.some((code) => hasCode(err, code)),
      renewed: (c) => {
        if (c.epoch !== term.epoch) {
          if (c.epoch > term.epoch) this.revealed = { epoch: c.epoch, sentAtMs: c.sentAtMs };
          return epochChanged(term.epoch, c.epoch);
        }
        events.emit("lease.renewed", { epoch: term.epoch, deadlineMs: term.deadline.deadlineMs, via: c.via });
        return undefined;
      },
      failed: (error) => events.emit("error", { op: "lease-keepalive", error: error as Error }),
      lost: (error, refused) => {
        atDeadline = !refused;
        this.lose(term, error);
      },
      deadlineError: () =>
        new ShiftlockError("lease_lost", "no keepalive of the generation's lease succeeded before its deadline", {
          generation: cfg.generationId,
          epoch: term.epoch.toString(10),
        }),
    }).catch((err: unknown) => this.lose(term, err instanceof Error ? err : new Error(String(err))));
    // After `ended` the server closes the channel itself (and the channel ends then): closing
    // it here as well would race the server's close.
    if (!term.endedByServer) channel?.close();
    return atDeadline;
  }

  /**
   * One keepalive: the channel's next confirmed ping (waiting up to half an interval for it)
   * while the channel is confirming, else an HTTP keepalive.
   */
  private async keepaliveOnce(
    term: Term,
    channel: LeaseChannel | undefined,
    ttlMs: number,
    signal: AbortSignal,
  ): Promise<Confirmation> {
    const { cfg } = this.host;
    const sinceMs = term.deadline.deadlineMs - cfg.leaseTtlMs;
    if (channel !== undefined && !channel.ended && term.channelFresh(cfg.clock.nowMs(), 2 * cfg.renewIntervalMs)) {
      const waitMs = Math.max(1, Math.floor(cfg.renewIntervalMs / 2));
      const sentAtMs = await term.nextHeard(sinceMs, waitMs, cfg.clock, signal);
      if (sentAtMs !== undefined) return { epoch: term.epoch, sentAtMs, via: "channel" };
    }
    signal.throwIfAborted();
    const sentAtMs = cfg.clock.nowMs();
    const record = await cfg.backend.keepaliveGeneration({ id: cfg.generationId, ttlMs }, { signal });
    return { epoch: record.leaseEpoch, sentAtMs, via: "http" };
  }

  /** The term's channel, when the backend can open one; it follows the term and closes with it. */
  private openChannel(term: Term): LeaseChannel | undefined {
    const { cfg, events } = this.host;
    let channel: LeaseChannel | undefined;
    try {
      channel = cfg.backend.openLeaseChannel?.(cfg.generationId, {
        ttlMs: cfg.leaseTtlMs,
        pingIntervalMs: cfg.renewIntervalMs,
        signal: this.stop.signal,
      });
    } catch (err) {
      events.emit("error", { op: "lease-channel", error: err as Error });
    }
    if (channel !== undefined) void this.follow(term, channel);
    return channel;
  }

  private async follow(term: Term, channel: LeaseChannel): Promise<void> {
    try {
      // Read to the end (the term's end closes the channel, or the server does after `ended`).
      for await (const item of channel) if (!term.lost.aborted) this.onChannelItem(term, item);
    } catch (err) {
      // The channel gave up (it never got established, or was refused): HTTP keepalives go on.
      if (!term.lost.aborted && !this.stop.signal.aborted) {
        this.host.events.emit("error", { op: "lease-channel", error: err as Error });
      }
    }
  }

  private onChannelItem(term: Term, item: LeaseChannelItem): void {
    switch (item.type) {
      case "opened":
        return this.channelConfirmed(term, item.generation.leaseEpoch, item.sentAtMs, item.receivedAtMs);
      case "pong":
        return this.channelConfirmed(term, item.leaseEpoch, item.sentAtMs, item.receivedAtMs);
      case "lease":
        if (item.leaseEpoch > term.epoch) this.lose(term, epochChanged(term.epoch, item.leaseEpoch));
        return;
      case "ended":
        if (item.leaseEpoch !== term.epoch) return; // an older connection's epoch
        term.endedByServer = true;
        return this.lose(
          term,
          new ShiftlockError("lease_lost", `the generation's lease ended (${item.reason})`, {
            reason: item.reason,
            epoch: item.leaseEpoch.toString(10),
          }),
        );
    }
  }

  private channelConfirmed(term: Term, epoch: bigint, sentAtMs: number, receivedAtMs: number): void {
    if (epoch > term.epoch) {
      this.revealed = { epoch, sentAtMs };
      return this.lose(term, epochChanged(term.epoch, epoch));
    }
    if (epoch !== term.epoch) return; // a connection opened in an older epoch
    // Arrived after the deadline already held: the server may have ended the epoch meanwhile.
    if (receivedAtMs >= term.deadline.deadlineMs) return;
    term.heard(sentAtMs);
  }

  private lose(term: Term, error: Error): void {
    if (term.lost.aborted) return;
    if (term.epoch > this.lastLostEpoch) this.lastLostEpoch = term.epoch;
    if (this.term === term) this.term = undefined;
    term.controller.abort(error);
    this.host.events.emit("lease.lost", { epoch: term.epoch, error });
    this.notify();
  }

  /** After a loss at the deadline: ask the server to end the epoch, so its claims are free now. */
  private async endOnServer(): Promise<void> {
    const { cfg, events } = this.host;
    const untilMs = cfg.clock.nowMs() + cfg.leaseTtlMs;
    try {
      await retrying({ clock: cfg.clock, untilMs, signal: this.stop.signal }, () =>
        cfg.backend.endGenerationLease(cfg.generationId, { signal: this.stop.signal }),
      );
    } catch (err) {
      if (!this.stop.signal.aborted) events.emit("error", { op: "lease-end", error: err as Error });
    }
  }

  private notify(): void {
    for (const wake of [...this.waiters]) wake();
    this.waiters.clear();
  }

  /** Resolves at the next change of term or loop state; rejects when `signal` aborts. */
  private changed(signal: AbortSignal | undefined): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const onAbort = (): void => {
        this.waiters.delete(wake);
        reject(signal?.reason as Error);
      };
      const wake = (): void => {
        signal?.removeEventListener("abort", onAbort);
        resolve();
      };
      this.waiters.add(wake);
      signal?.addEventListener("abort", onAbort, { once: true });
    });
  }
}

function epochChanged(held: bigint, seen: bigint): ShiftlockError {
  return new ShiftlockError("lease_lost", `the generation's lease epoch ${held} ended (the server is at ${seen})`, {
    epoch: held.toString(10),
  });
}

function closedError(): ShiftlockError {
  return new ShiftlockError("invalid_state", "generation session is closed", { reason: "closed" });
}
