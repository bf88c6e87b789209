/**
 * `WriteLease`: a held coord write lease, its keepalive loop and its loss signal.
 *
 * Guarantees:
 * - Keepalive timing and loss detection follow the client's one lease rule
 *   (src/client/lease-timing.ts): a keepalive every ttl/3 from the send time of the last
 *   successful one; loss when the server refuses a keepalive (`lease_lost`, 410), when
 *   refresh or publish is refused with `lease_lost`, or when no keepalive has succeeded by
 *   `send time + ttl − margin` (default margin max(ttl/10, 50 ms)) — before the server can
 *   grant the lease to anyone else.
 * - `done` resolves and `signal` aborts exactly once, on release or loss; `err` is the loss
 *   error, undefined while held and after a clean release.
 * - `release()` ignores the caller's cancellation, is bounded by its own timeout (default
 *   5 s) and is idempotent: every call returns the first call's promise. After a loss it
 *   resolves at once.
 *
 * Does not: fence your storage. Write under `fence` (key `{ns}/scopes/{volumeId}/
 * {objectStoreId}/{key}`, token `epoch`) through shiftlock/fence, so the store refuses
 * smaller epochs; a lease alone cannot stop a paused process from writing late.
 */
import { type Clock, sleepLinked } from "../../core/clock.ts";
import type { CoordLease } from "../../protocol/coord.ts";
import { ShiftlockError, hasCode } from "../../protocol/errors.ts";
import { LeaseDeadline, defaultRenewIntervalMs, defaultSafetyMarginMs, keepAlive } from "../lease-timing.ts";
import { type FenceCredential, fenceCredential, scopeFenceKey } from "../fence/fence-key.ts";
import { callBackoff, isRetryable, retryDelayMs } from "../transport/retry-policy.ts";
import { keyedUnsupported } from "./coord-scope.ts";
import type { CheckedScope } from "./coord-scope.ts";
import type { CallOptions, PublishRequest, Snapshot, WriteLease } from "./coord-types.ts";

/** The lease as the server granted or extended it (`expiresAtMs` on the server clock). */
export type LeaseGrant = CoordLease;

/** The operations a lease needs from its coordinator (HTTP or in-memory). */
export interface LeaseDriver {
  /** Extend the lease by `ttlMs`; rejects with `lease_lost` when the lease is gone. */
  keepalive(ttlMs: number, signal: AbortSignal): Promise<{ lease: LeaseGrant; wantLock: boolean }>;
  refresh(signal: AbortSignal | undefined): Promise<Snapshot>;
  publish(req: PublishRequest, signal: AbortSignal | undefined): Promise<Snapshot>;
  /** Delete the lease (idempotent on the server side). */
  release(signal: AbortSignal): Promise<void>;
}

/** Tuning of a lease's timers. */
export interface LeaseTimingOptions {
  /** Subtracted from the local deadline for clock-rate drift and timer lateness (default max(ttl/10, 50)). */
  safetyMarginMs?: number | undefined;
  /** Bound on `release()` (default 5,000 ms). */
  releaseTimeoutMs?: number | undefined;
}

export interface WriteLeaseInit extends LeaseTimingOptions {
  /** The coordinator's namespace (for the fence key). */
  namespace: string;
  scope: CheckedScope;
  grant: LeaseGrant;
  ttlMs: number;
  /**
   * Client-clock time from which the server's ttl is known to run at the latest (the send
   * time of the acquire request, or the best bound for a queued grant).
   */
  requestedAtMs: number;
  /** Run the first keepalive at once (a queued grant whose start time is uncertain). */
  keepaliveNow?: boolean | undefined;
  driver: LeaseDriver;
  clock: Clock;
  onWantLock?: (() => void) | undefined;
}

const DEFAULT_RELEASE_TIMEOUT_MS = 5_000;

type State = "held" | "releasing" | "released" | "lost";

export class HeldWriteLease implements WriteLease {
  readonly scope: Readonly<{ volumeId: string; objectStoreId: string; key: string; participantId: string }>;
  readonly leaseId: string;
  readonly epoch: bigint;
  readonly fence: FenceCredential;
  readonly done: Promise<void>;

  private state: State = "held";
  private lossError: Error | undefined;
  /** The loss came from the server (410), not from our own deadline. */
  private refusedByServer = false;
  private releaseError: Error | undefined;
  private serverExpiresAtMs: number;
  private lastWantLock = false;
  private readonly deadline: LeaseDeadline;
  private releasing: Promise<void> | undefined;
  private resolveDone!: () => void;
  private readonly ended = new AbortController();
  /** Stops the keepalive loop (and aborts its in-flight request). */
  private readonly stopLoop = new AbortController();
  private readonly releaseTimeoutMs: number;
  private readonly keyed: boolean;
  private readonly driver: LeaseDriver;
  private readonly clock: Clock;
  private readonly onWantLock: (() => void) | undefined;

  constructor(init: WriteLeaseInit) {
    const { scope, grant } = init;
    this.scope = Object.freeze({
      volumeId: scope.volumeId,
      objectStoreId: scope.objectStoreId,
      key: scope.key,
      participantId: scope.participantId,
    });
    this.keyed = scope.keyed;
    this.leaseId = grant.leaseId;
    this.epoch = grant.epoch;
    this.fence = fenceCredential(
      scopeFenceKey(init.namespace, scope.volumeId, scope.objectStoreId, scope.key),
      grant.epoch,
    );
    this.serverExpiresAtMs = grant.expiresAtMs;
    this.releaseTimeoutMs = init.releaseTimeoutMs ?? DEFAULT_RELEASE_TIMEOUT_MS;
    const marginMs = init.safetyMarginMs ?? defaultSafetyMarginMs(init.ttlMs);
    this.deadline = new LeaseDeadline(marginMs, init.requestedAtMs + init.ttlMs);
    this.driver = init.driver;
    this.clock = init.clock;
    this.onWantLock = init.onWantLock;
    this.done = new Promise<void>((resolve) => (this.resolveDone = resolve));
    const intervalMs = defaultRenewIntervalMs(init.ttlMs);
    void keepAlive({
      clock: init.clock,
      deadline: this.deadline,
      intervalMs,
      firstAtMs: init.keepaliveNow === true ? init.clock.nowMs() : init.requestedAtMs + intervalMs,
      stop: this.stopLoop.signal,
      ttlMs: () => init.ttlMs,
      send: (ttlMs, signal) => this.driver.keepalive(ttlMs, signal),
      isRefusal: (err) => hasCode(err, "lease_lost"),
      renewed: (res) => {
        this.serverExpiresAtMs = res.lease.expiresAtMs;
        this.lastWantLock = res.wantLock;
        if (res.wantLock && this.state === "held") this.notifyWantLock();
        return undefined;
      },
      lost: (error, refused) => this.lose(error, refused),
      deadlineError: () =>
        new ShiftlockError("lease_lost", "coord: no keepalive succeeded before the lease deadline", {
          leaseId: this.leaseId,
        }),
    });
  }

  get expiresAtMs(): number {
    return this.serverExpiresAtMs;
  }

  get wantLock(): boolean {
    return this.lastWantLock;
  }

  get signal(): AbortSignal {
    return this.ended.signal;
  }

  get err(): Error | undefined {
    return this.lossError ?? this.releaseError;
  }

  /** Client-clock time by which a keepalive must succeed, or the lease is declared lost. */
  get localDeadlineMs(): number {
    return this.deadline.lossAtMs;
  }

  async refresh(opts: CallOptions = {}): Promise<Snapshot> {
    opts.signal?.throwIfAborted();
    if (this.keyed) throw keyedUnsupported("refresh");
    this.assertHeld();
    return this.guard(this.driver.refresh(opts.signal));
  }

  async publish(req: PublishRequest, opts: CallOptions = {}): Promise<Snapshot> {
    opts.signal?.throwIfAborted();
    if (this.keyed) throw keyedUnsupported("publish");
    this.assertHeld();
    return this.guard(this.driver.publish(req, opts.signal));
  }

  /** Release the lease. The caller's signal is deliberately ignored (see module comment). */
  release(_opts?: CallOptions): Promise<void> {
    this.releasing ??= this.doRelease();
    return this.releasing;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.release();
  }

  private assertHeld(): void {
    if (this.state === "lost" && this.lossError !== undefined) throw this.lossError;
    if (this.state !== "held")
      throw new ShiftlockError("lease_lost", "coord: lease released", { leaseId: this.leaseId });
  }

  /** A `lease_lost` answer to refresh/publish means the server no longer has the lease. */
  private async guard(call: Promise<Snapshot>): Promise<Snapshot> {
    try {
      return await call;
    } catch (err) {
      if (hasCode(err, "lease_lost") && this.state === "held") this.lose(err, true);
      throw err;
    }
  }

  private finish(state: "released" | "lost", reason: Error): void {
    this.state = state;
    this.stopLoop.abort(reason);
    this.ended.abort(reason);
    this.resolveDone();
  }

  private lose(err: Error, refusedByServer = false): void {
    if (this.state !== "held") return;
    this.lossError = err;
    this.refusedByServer = refusedByServer;
    this.finish("lost", err);
  }

  private async doRelease(): Promise<void> {
    if (this.state === "lost") {
      // After a deadline loss the server may still hold the lease (keepalives failed in
      // transit): free it early, best effort, without making the caller wait.
      if (!this.refusedByServer) void this.deleteQuietly();
      return;
    }
    this.state = "releasing";
    this.stopLoop.abort(new ShiftlockError("lease_lost", "coord: lease released"));
    try {
      await this.deleteWithin(this.releaseTimeoutMs);
      this.finish("released", new ShiftlockError("lease_lost", "coord: lease released", { leaseId: this.leaseId }));
    } catch (err) {
      const error = err instanceof Error ? err : new Error(String(err));
      this.releaseError = error;
      this.finish("released", error);
      throw error;
    }
  }

  private async deleteQuietly(): Promise<void> {
    try {
      await this.deleteWithin(this.releaseTimeoutMs);
    } catch {
      // best effort: the server expires the lease anyway
    }
  }

  /** DELETE, retrying what the client's one retry rule retries, until it succeeds or `timeoutMs` passes. */
  private async deleteWithin(timeoutMs: number): Promise<void> {
    const budget = new AbortController();
    const timeout = new ShiftlockError("lease_lost", `coord: release not confirmed within ${timeoutMs} ms`, {
      leaseId: this.leaseId,
    });
    const timer = this.clock.sleep(timeoutMs, budget.signal).then(
      () => budget.abort(timeout),
      () => undefined,
    );
    let lastError: unknown = timeout;
    const backoff = callBackoff();
    try {
      while (!budget.signal.aborted) {
        try {
          // Race the abort too: a transport that ignores its signal must not outlive the bound.
          await Promise.race([this.driver.release(budget.signal), aborted(budget.signal)]);
          return;
        } catch (err) {
          if (budget.signal.aborted) break;
          lastError = err;
          // A release may always be repeated (its route's declaration): the one rule decides on the failure.
          if (!isRetryable(err)) throw err;
          await sleepLinked(this.clock, retryDelayMs(err, backoff), budget.signal).catch(() => undefined);
        }
      }
      throw lastError;
    } finally {
      if (!budget.signal.aborted) budget.abort();
      await timer;
    }
  }

  private notifyWantLock(): void {
    try {
      this.onWantLock?.();
    } catch (err) {
      console.error("onWantLock callback threw", err);
    }
  }
}

/** Rejects with the signal's reason once it aborts. */
function aborted(signal: AbortSignal): Promise<never> {
  return new Promise<never>((_, reject) => {
    if (signal.aborted) reject(signal.reason as Error);
    else signal.addEventListener("abort", () => reject(signal.reason as Error), { once: true });
  });
}
