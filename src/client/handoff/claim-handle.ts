/**
 * ClaimHandle: one named claim of a generation session — acquiring it, keeping it renewed,
 * releasing it, and adopting it after a handoff commits it to this generation.
 *
 * Guarantees:
 * - At most one live {@link Lease} per handle; concurrent `tryAcquire`/`waitForOwnership`
 *   callers share one backend call and receive the same lease.
 * - No orphan ownership: an acquire that succeeds after every caller gave up (signal
 *   aborted) or after the session closed is released again at once.
 * - While a lease is held it is renewed every `renewIntervalMs`. A refused renew
 *   (`not_owner`, `stale_token`, `claim_not_found`) ends it as lost at once; a transient
 *   failure is retried until `deadlineMs - safetyMarginMs`, and only then is the lease lost
 *   — before the server can expire it and let anyone else acquire.
 * - A voluntary release stops renewal first: it never reports a loss.
 *
 * Does not: check that the claim name is registered anywhere (claims never are), or
 * release claims when the process dies (the server's TTL does that).
 */
import { sleepLinked } from "../../core/clock.ts";
import type { ClaimRecord } from "../../protocol/claims.ts";
import { ShiftlockError, hasCode } from "../../protocol/errors.ts";
import type { GenerationState } from "../../protocol/generations.ts";
import type { ClaimWatch, ClaimWatchItem } from "../claims/claims-backend.ts";
import type { ResolvedConfig } from "./config.ts";
import type { RuntimeEvents } from "./events.ts";
import { Lease } from "./lease.ts";
import { anySignal, isTransient, retryTransient } from "./retry.ts";
import { REFUSED, renewOnce } from "./renew-once.ts";

/** What a handle needs from its session. */
export interface SessionContext {
  readonly cfg: ResolvedConfig;
  readonly events: RuntimeEvents;
  /** Aborts when the session closes. */
  readonly closedSignal: AbortSignal;
  readonly state: GenerationState;
  /** Throws `invalid_state` when the generation may not take claims now. */
  assertCanAcquire(): void;
  /** A fresh ownership was installed (standby → active). */
  noteAcquired(): void;
  /** `<generation>:<op>:<claim>:<seq>`, unique per session. */
  operationId(op: string, claim: string): string;
}

export interface ClaimAcquireOptions {
  signal?: AbortSignal | undefined;
}

export interface ClaimWaitOptions extends ClaimAcquireOptions {
  /** Wake on claim events (WebSocket watch) as well as polling; default true. */
  watch?: boolean;
}

export class ClaimHandle {
  private current: Lease | undefined;
  private inflight: Promise<Lease> | undefined;
  private readonly interested = new Set<object>();
  private renewStop: AbortController | undefined;
  /** Renewals pause while a commit decides the lease's fate (its refusal is not a loss). */
  committing = false;

  constructor(
    readonly name: string,
    private readonly session: SessionContext,
  ) {}

  /** The live lease, if this generation holds the claim. */
  get lease(): Lease | undefined {
    return this.current?.held === true ? this.current : undefined;
  }

  /**
   * One acquire attempt. Resolves with the lease, or rejects with `claim_held` when another
   * generation owns or reserves the claim.
   */
  async tryAcquire(opts: ClaimAcquireOptions = {}): Promise<Lease> {
    const held = this.lease;
    if (held !== undefined) return held;
    this.session.assertCanAcquire();
    opts.signal?.throwIfAborted();
    this.inflight ??= this.acquireOnce().finally(() => {
      this.inflight = undefined;
    });
    const shared = this.inflight;
    const me = {};
    this.interested.add(me);
    try {
      return await new Promise<Lease>((resolve, reject) => {
        const onAbort = (): void => {
          // Synchronously, so a response arriving in the same tick sees nobody waiting.
          this.interested.delete(me);
          reject(opts.signal?.reason as Error);
        };
        opts.signal?.addEventListener("abort", onAbort, { once: true });
        shared.then(
          (lease) => {
            opts.signal?.removeEventListener("abort", onAbort);
            resolve(lease);
          },
          (err: unknown) => {
            opts.signal?.removeEventListener("abort", onAbort);
            reject(err instanceof Error ? err : new Error(String(err)));
          },
        );
      });
    } finally {
      this.interested.delete(me);
    }
  }

  /**
   * Acquire, retrying every `acquireIntervalMs` (and on each claim event) while another
   * generation holds the claim or the service is unreachable. After a handoff commits the
   * claim to this generation, this adopts it with the committed token.
   */
  async waitForOwnership(opts: ClaimWaitOptions = {}): Promise<Lease> {
    const { cfg } = this.session;
    const stop = anySignal(opts.signal, this.session.closedSignal);
    let wake: (() => void) | undefined;
    let committed: { record: ClaimRecord; deadlineMs: number } | undefined;
    const onItem = (item: ClaimWatchItem): void => {
      if (item.type === "event" && item.reason === "transfer_committed" && this.isMine(item.claim)) {
        // The commit event itself proves ownership: adopt without another round trip. The
        // remaining ttl is counted from the event's arrival; the first renew, sent at
        // once, re-bases the deadline on a measured round trip.
        committed = { record: item.claim, deadlineMs: cfg.clock.nowMs() + (item.claim.expiresAtMs - item.timeMs) };
      }
      wake?.();
    };
    const watch = opts.watch === false ? undefined : this.startWakeWatch(onItem, stop);
    try {
      for (;;) {
        const held = this.lease;
        if (held !== undefined) return held;
        if (committed !== undefined) {
          const { record, deadlineMs } = committed;
          committed = undefined;
          if (deadlineMs - cfg.safetyMarginMs > cfg.clock.nowMs()) return this.adopt(record, deadlineMs);
        }
        try {
          return await this.tryAcquire({ signal: stop });
        } catch (err) {
          if (stop.aborted) throw this.stopReason(opts.signal);
          if (!hasCode(err, "claim_held") && !hasCode(err, "not_owner") && !isTransient(err)) throw err;
        }
        if (committed !== undefined) continue;
        const pause = new AbortController();
        const woken = new Promise<void>((resolve) => (wake = resolve));
        const slept = cfg.clock.sleep(cfg.acquireIntervalMs, AbortSignal.any([stop, pause.signal])).catch(() => {});
        await Promise.race([woken, slept]);
        pause.abort();
        wake = undefined;
        if (stop.aborted) throw this.stopReason(opts.signal);
      }
    } finally {
      watch?.close();
    }
  }

  /**
   * Install a lease for a claim a handoff committed to this generation, without a round
   * trip. `deadlineMs` is the local-clock time until which the server keeps the claim (the
   * handoff result carries it). A renew is sent at once to confirm ownership.
   */
  adopt(record: ClaimRecord, deadlineMs: number): Lease {
    const held = this.lease;
    if (held !== undefined && held.token === record.fencingToken) return held;
    this.session.assertCanAcquire();
    if (record.ownerGeneration !== this.session.cfg.generationId || record.phase !== "owned") {
      throw new ShiftlockError("not_owner", `claim ${JSON.stringify(this.name)} is not owned by this generation`, {
        claim: record.name,
      });
    }
    return this.install(record.fencingToken, deadlineMs, true);
  }

  /** Release the current lease, if any (see {@link Lease.release}). */
  async release(): Promise<void> {
    const lease = this.current;
    if (lease !== undefined) await this.releaseLease(lease);
  }

  /** @internal Lease.release() lands here. */
  async releaseLease(lease: Lease): Promise<void> {
    if (lease !== this.current || !lease.held) return;
    const { cfg } = this.session;
    this.stopRenew();
    this.current = undefined;
    // End locally first: protected work stops before ownership is given up on the server.
    lease.end("released");
    this.session.events.emit("claim.released", { claim: this.name, token: lease.token, reason: "released" });
    const operationId = this.session.operationId("release", this.name);
    try {
      await retryTransient(cfg.clock, lease.deadlineMs, () =>
        cfg.backend.releaseClaim({
          claimName: this.name,
          generationId: cfg.generationId,
          token: lease.token,
          operationId,
        }),
      );
    } catch (err) {
      // Already not ours (expired, or a newer owner): the release has nothing left to do.
      if (REFUSED.some((code) => hasCode(err, code))) return;
      throw err;
    }
  }

  /** @internal End the lease without a server call (commit, close). */
  endLease(reason: "transferred" | "closed"): Lease | undefined {
    const lease = this.current;
    this.stopRenew();
    this.current = undefined;
    if (lease?.end(reason) === true) {
      this.session.events.emit("claim.released", { claim: this.name, token: lease.token, reason });
    }
    return lease;
  }

  /** @internal Declare the lease lost (refusal or deadline). */
  lose(lease: Lease, cause: Error): void {
    if (lease !== this.current) return;
    this.stopRenew();
    this.current = undefined;
    if (lease.end("lost", cause)) {
      this.session.events.emit("claim.lost", { claim: this.name, token: lease.token, error: cause });
    }
  }

  private async acquireOnce(): Promise<Lease> {
    const { cfg } = this.session;
    const sentAt = cfg.clock.nowMs();
    const record = await cfg.backend.acquireClaim({
      claimName: this.name,
      generationId: cfg.generationId,
      ttlMs: cfg.leaseTtlMs,
    });
    if (record.ownerGeneration !== cfg.generationId || record.phase !== "owned") {
      // E.g. our own reservation for a successor: not ownership we may work under.
      throw new ShiftlockError("claim_held", `claim ${JSON.stringify(this.name)} is ${record.phase}`, {
        claim: record,
      });
    }
    if (this.session.closedSignal.aborted || this.interested.size === 0) {
      await this.compensate(record.fencingToken);
      throw this.session.closedSignal.aborted
        ? new ShiftlockError("invalid_state", "generation session is closed", { reason: "closed" })
        : new ShiftlockError("invalid_state", "acquire cancelled", { reason: "cancelled" });
    }
    // Adopted meanwhile (commit event): keep that lease, it is the same ownership epoch.
    const held = this.lease;
    if (held !== undefined && held.token === record.fencingToken) return held;
    // The server's expiry is at least its receive time + ttl, which is after our send time + ttl.
    return this.install(record.fencingToken, sentAt + cfg.leaseTtlMs, false);
  }

  private install(token: bigint, deadlineMs: number, adopted: boolean): Lease {
    const lease = new Lease(this, {
      claimName: this.name,
      generationId: this.session.cfg.generationId,
      token,
      deadlineMs,
    });
    this.current = lease;
    this.session.events.emit("claim.acquired", { claim: this.name, token, adopted });
    this.session.noteAcquired();
    this.startRenew(lease, adopted ? 0 : this.session.cfg.renewIntervalMs);
    return lease;
  }

  private async compensate(token: bigint): Promise<void> {
    const { cfg } = this.session;
    try {
      await cfg.backend.releaseClaim({
        claimName: this.name,
        generationId: cfg.generationId,
        token,
        operationId: this.session.operationId("release-compensate", this.name),
      });
    } catch (err) {
      this.session.events.emit("error", { op: "release-compensate", claim: this.name, error: err as Error });
    }
  }

  private stopRenew(): void {
    this.renewStop?.abort();
    this.renewStop = undefined;
  }

  private startRenew(lease: Lease, firstDelayMs: number): void {
    this.stopRenew();
    const stop = new AbortController();
    this.renewStop = stop;
    this.renewLoop(lease, firstDelayMs, stop.signal).catch((err: unknown) => {
      this.session.events.emit("error", { op: "renew-loop", claim: this.name, error: err as Error });
    });
  }

  /**
   * The heartbeat, one per held lease:
   * 1. sleep until the next renew or the loss point (deadline − margin), whichever is first;
   * 2. past the loss point: lost;
   * 3. renew, racing the call against the loss point;
   * 4. success moves the deadline to send time + ttl; a refusal is a loss; a transient
   *    failure retries after a short backoff.
   */
  private async renewLoop(lease: Lease, firstDelayMs: number, stop: AbortSignal): Promise<void> {
    const { cfg } = this.session;
    let nextAt = cfg.clock.nowMs() + firstDelayMs;
    let backoffMs = 50;
    for (;;) {
      const lossAt = lease.deadlineMs - cfg.safetyMarginMs;
      const now = cfg.clock.nowMs();
      if (now >= lossAt) {
        this.lose(
          lease,
          new ShiftlockError("lease_lost", "no successful renew before the deadline", { claim: this.name }),
        );
        return;
      }
      if (now < nextAt) {
        try {
          await sleepLinked(cfg.clock, Math.min(nextAt, lossAt) - now, stop);
        } catch {
          return; // stopped
        }
        continue;
      }
      if (this.committing) {
        nextAt = now + cfg.renewIntervalMs;
        continue;
      }
      const ttlMs = lease.reserved ? cfg.reservationTtlMs : cfg.leaseTtlMs;
      const outcome = await renewOnce(cfg, this.name, lease.token, ttlMs, lossAt - now, stop);
      if (stop.aborted || !lease.held) return;
      if (outcome.kind === "ok") {
        backoffMs = 50;
        const record = outcome.record;
        if (record.ownerGeneration !== cfg.generationId || record.fencingToken !== lease.token) {
          this.lose(lease, new ShiftlockError("not_owner", "renew returned another owner", { claim: record }));
          return;
        }
        // The server set expiry to its now + ttl (it may shorten a reservation's): the
        // bound is this send time + ttl, never an older, longer one.
        lease.deadlineMs = outcome.sentAt + ttlMs;
        nextAt = outcome.sentAt + cfg.renewIntervalMs;
        this.session.events.emit("claim.renewed", {
          claim: this.name,
          token: lease.token,
          deadlineMs: lease.deadlineMs,
        });
      } else if (outcome.kind === "refused") {
        if (this.committing) continue; // the commit's outcome decides
        this.lose(lease, outcome.error);
        return;
      } else if (outcome.kind === "transient") {
        this.session.events.emit("error", { op: "renew", claim: this.name, error: outcome.error });
        nextAt = cfg.clock.nowMs() + backoffMs;
        backoffMs = Math.min(backoffMs * 2, Math.max(cfg.renewIntervalMs / 2, 50));
      }
      // "deadline": loop re-checks the loss point.
    }
  }

  private isMine(claim: ClaimRecord | null): boolean {
    return claim !== null && claim.ownerGeneration === this.session.cfg.generationId && claim.phase === "owned";
  }

  /** Watch the claim and call `onItem` when it may have become acquirable (or ours). */
  private startWakeWatch(onItem: (item: ClaimWatchItem) => void, stop: AbortSignal): ClaimWatch | undefined {
    let watch: ClaimWatch;
    try {
      watch = this.session.cfg.backend.watchClaim(this.name, { signal: stop });
    } catch {
      return undefined; // no watch support here: polling alone still works
    }
    void (async () => {
      try {
        for await (const item of watch) {
          const claim = item.claim;
          if (claim === null || claim.phase === "unowned" || this.isMine(claim)) onItem(item);
        }
      } catch {
        // A broken watch only costs latency: the poll continues.
      }
    })();
    return watch;
  }

  private stopReason(signal: AbortSignal | undefined): Error {
    if (signal?.aborted === true) return signal.reason as Error;
    return new ShiftlockError("invalid_state", "generation session is closed", { reason: "closed" });
  }
}
