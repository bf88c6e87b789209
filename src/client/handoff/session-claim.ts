/**
 * SessionClaim: the runtime's side of one named claim of a generation session — acquiring it,
 * keeping it (bound to the session's lease, or renewed on its own), releasing it, adopting it
 * after a handoff, and what the session and a handoff may do to it. `ClaimHandle` is its
 * public face; nothing here is exported from the package entry.
 *
 * Guarantees:
 * - At most one live {@link Lease} per claim; concurrent `tryAcquire`/`waitForOwnership`
 *   callers share one backend call and receive the same lease.
 * - No orphan ownership: an acquire that succeeds after every caller gave up (signal
 *   aborted), after the session closed, or bound to a lease epoch the session no longer
 *   holds is released again at once.
 * - Bound (the default, docs/protocol.md#sessions): the claim is acquired with `bound: true`
 *   under a live epoch of the session's lease (session-lease.ts) and has no renew loop; its
 *   lease shares the epoch's deadline and ends as lost when the epoch is lost — before the
 *   server can let anyone else have it when keepalives fail, at once when the server says
 *   the epoch is over. An acquire answered `no_lease` ends the session's epoch; waiting
 *   acquires try again under the next one.
 * - Unbound (`bound: false`): the lease is renewed by the client's one lease rule
 *   (src/client/lease-timing.ts): a refused renew (`not_owner`, `stale_token`,
 *   `claim_not_found`, `evicted`) ends it as lost at once; a transient failure is retried until
 *   `deadlineMs - safetyMarginMs`, and only then is the lease lost — before the server can
 *   expire it and let anyone else acquire. A claim committed to this generation without a
 *   binding (an unbound predecessor's handoff) is kept this way in either mode.
 * - A voluntary release stops renewal first: it never reports a loss.
 *
 * Does not: check that the claim name is registered anywhere (claims never are), or
 * release claims when the process dies (the server's lease or TTL does that).
 */
import type { ClaimRecord } from "../../protocol/claims.ts";
import { ShiftlockError, hasCode } from "../../protocol/errors.ts";
import type { GenerationState } from "../../protocol/generations.ts";
import { LeaseDeadline, keepAlive } from "../lease-timing.ts";
import type { ResolvedConfig } from "./config.ts";
import type { RuntimeEvents } from "./events.ts";
import { Lease, type LeaseControl } from "./lease.ts";
import type { LeaseTerm, SessionLease } from "./session-lease.ts";
import { waitForOwnership } from "./ownership-wait.ts";
import { retrying } from "../transport/retry-policy.ts";

export interface ClaimAcquireOptions {
  signal?: AbortSignal | undefined;
}

export interface ClaimWaitOptions extends ClaimAcquireOptions {
  /** Wake on claim events (WebSocket watch) as well as polling; default true. */
  watch?: boolean;
}

/**
 * Codes that mean the claim is no longer ours: retrying cannot help. `evicted`: an operator
 * took it away (docs/protocol.md#eviction); the lease is lost like any other.
 */
export const REFUSED = ["not_owner", "stale_token", "claim_not_found", "evicted"] as const;

/**
 * The longest an adopted claim waits for its first renew, which re-bases the deadline
 * estimated from the commit event on a measured round trip and confirms the adoption. Not
 * at once: a successor adopts every claim of a commit batch within one batch's time, and N
 * renews sent at once would land among the batch's remaining commits (the same Worker,
 * locally the same thread; docs/handoff.md measures it) and lengthen the hand-over.
 */
export const ADOPTED_FIRST_RENEW_MAX_MS = 1_000;

/** What a claim needs from its session. */
export interface SessionContext {
  readonly cfg: ResolvedConfig;
  readonly events: RuntimeEvents;
  /** Aborts when the session closes. */
  readonly closedSignal: AbortSignal;
  /** The session's lease, when its claims are bound (`cfg.bound`). */
  readonly lease: SessionLease | undefined;
  readonly state: GenerationState;
  /** Throws `invalid_state` when the generation may not take claims now. */
  assertCanAcquire(): void;
  /** A fresh ownership was installed (standby → active). */
  noteAcquired(): void;
  /** `<generation>:<op>:<claim>:<seq>`, unique per session and a valid name. */
  operationId(op: string, claim: string): string;
}

interface Held {
  lease: Lease;
  control: LeaseControl;
  /** Stops this lease's renew loop (unbound) or its following of the epoch (bound). */
  renewStop: AbortController;
}

/** How a new lease is kept: bound to an epoch of the session's lease, or by its own deadline. */
type Keeping = { term: LeaseTerm } | { deadlineMs: number };

export class SessionClaim {
  private current: Held | undefined;
  private inflight: Promise<Lease> | undefined;
  private readonly interested = new Set<object>();
  /** Renewals pause while a commit decides the lease's fate (its refusal is not a loss). */
  committing = false;

  constructor(
    readonly name: string,
    private readonly session: SessionContext,
  ) {}

  /** The live lease, if this generation holds the claim. */
  get lease(): Lease | undefined {
    return this.current?.lease.held === true ? this.current.lease : undefined;
  }

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

  async waitForOwnership(opts: ClaimWaitOptions = {}): Promise<Lease> {
    return waitForOwnership(this, this.session, opts);
  }

  /**
   * A claim a commit gave this generation. Unbound: kept from `deadlineMs`. Bound: under the
   * session's epoch it was bound to, which must be the live one (else `no_lease`).
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
    if (!record.bound) return this.install(record.fencingToken, { deadlineMs }, true);
    const term = this.session.lease?.current;
    if (term === undefined || term.epoch !== record.leaseEpoch) {
      throw new ShiftlockError(
        "no_lease",
        `claim ${JSON.stringify(this.name)} is bound to lease epoch ${record.leaseEpoch}, which this session does not hold`,
        { claim: record.name },
      );
    }
    return this.install(record.fencingToken, { term }, true);
  }

  /** Release the current lease, if any. */
  async release(): Promise<void> {
    const lease = this.current?.lease;
    if (lease !== undefined) await this.releaseLease(lease);
  }

  /** End the lease without a server call (commit, close). */
  endLease(reason: "transferred" | "closed"): Lease | undefined {
    const held = this.takeCurrent();
    if (held?.control.end(reason) === true) {
      this.session.events.emit("claim.released", { claim: this.name, token: held.lease.token, reason });
    }
    return held?.lease;
  }

  /** Declare `lease` lost (refusal or deadline); ignored when it is not the current lease. */
  lose(lease: Lease, cause: Error): void {
    if (lease !== this.current?.lease) return;
    const held = this.takeCurrent();
    if (held?.control.end("lost", cause) === true) {
      this.session.events.emit("claim.lost", { claim: this.name, token: lease.token, error: cause });
    }
  }

  /** Mark `lease` reserved for a successor (renewals then carry the reservation ttl), or not. */
  setReserved(lease: Lease, reserved: boolean): void {
    if (lease === this.current?.lease) this.current.control.setReserved(reserved);
  }

  private async releaseLease(lease: Lease): Promise<void> {
    if (lease !== this.current?.lease || !lease.held) return;
    const { cfg } = this.session;
    const held = this.takeCurrent();
    // End locally first: protected work stops before ownership is given up on the server.
    held?.control.end("released");
    this.session.events.emit("claim.released", { claim: this.name, token: lease.token, reason: "released" });
    const operationId = this.session.operationId("release", this.name);
    try {
      await retrying({ clock: cfg.clock, untilMs: lease.deadlineMs }, () =>
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

  /** Forget the current lease and stop its renewals (or its following of the epoch). */
  private takeCurrent(): Held | undefined {
    const held = this.current;
    this.current = undefined;
    held?.renewStop.abort();
    return held;
  }

  private async acquireOnce(): Promise<Lease> {
    const { cfg } = this.session;
    const sessionLease = this.session.lease;
    const term = sessionLease === undefined ? undefined : await sessionLease.live(this.session.closedSignal);
    const sentAt = cfg.clock.nowMs();
    const base = { claimName: this.name, generationId: cfg.generationId };
    let record: ClaimRecord;
    try {
      record = await cfg.backend.acquireClaim(
        term === undefined ? { ...base, ttlMs: cfg.leaseTtlMs } : { ...base, bound: true },
      );
    } catch (err) {
      // The server holds no live lease of this generation: the session's epoch is over.
      if (term !== undefined && hasCode(err, "no_lease")) sessionLease?.lostEpoch(term.epoch, err);
      throw err;
    }
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
    if (term === undefined) {
      // The server's expiry is at least its receive time + ttl, which is after our send time + ttl.
      return this.install(record.fencingToken, { deadlineMs: sentAt + cfg.leaseTtlMs }, false);
    }
    if (!record.bound || record.leaseEpoch !== term.epoch || term.lost.aborted) {
      // Bound to an epoch this session does not hold (its own ended meanwhile, or the server is
      // at a newer one): nothing the session keeps would keep this claim.
      if (record.leaseEpoch > term.epoch) {
        sessionLease?.lostEpoch(term.epoch, new ShiftlockError("lease_lost", "the server is at a newer lease epoch"));
      }
      await this.compensate(record.fencingToken);
      throw new ShiftlockError("no_lease", `the session's lease epoch ${term.epoch} ended while acquiring`, {
        claim: this.name,
      });
    }
    return this.install(record.fencingToken, { term }, false);
  }

  private install(token: bigint, keeping: Keeping, adopted: boolean): Lease {
    const { cfg } = this.session;
    this.takeCurrent();
    let control!: LeaseControl;
    const lease: Lease = new Lease(
      {
        namespace: cfg.backend.namespace,
        claimName: this.name,
        generationId: cfg.generationId,
        token,
        // Bound: the epoch's own deadline object, so the lease follows every keepalive of the session.
        deadline: "term" in keeping ? keeping.term.deadline : new LeaseDeadline(cfg.safetyMarginMs, keeping.deadlineMs),
        release: (): Promise<void> => this.releaseLease(lease),
      },
      (c) => (control = c),
    );
    const renewStop = new AbortController();
    this.current = { lease, control, renewStop };
    this.session.events.emit("claim.acquired", { claim: this.name, token, adopted });
    this.session.noteAcquired();
    if ("term" in keeping) {
      this.follow(lease, keeping.term, renewStop.signal);
      return lease;
    }
    // An adopted claim's deadline was only estimated from an event: it renews early, but
    // after the commit batch it came from (see ADOPTED_FIRST_RENEW_MAX_MS).
    const firstDelayMs = adopted ? Math.min(cfg.renewIntervalMs, ADOPTED_FIRST_RENEW_MAX_MS) : cfg.renewIntervalMs;
    this.startRenew(lease, control, firstDelayMs, renewStop.signal);
    return lease;
  }

  /** A bound lease ends as lost with its epoch; `stop` (release, handoff, close) detaches it. */
  private follow(lease: Lease, term: LeaseTerm, stop: AbortSignal): void {
    if (stop.aborted) return;
    const forget = term.whenLost((error) => this.lose(lease, error));
    stop.addEventListener("abort", forget, { once: true });
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

  /** The heartbeat of one held lease (the rule and its steps: src/client/lease-timing.ts). */
  private startRenew(lease: Lease, control: LeaseControl, firstDelayMs: number, stop: AbortSignal): void {
    const { cfg, events } = this.session;
    keepAlive({
      clock: cfg.clock,
      deadline: control.deadline,
      intervalMs: cfg.renewIntervalMs,
      firstAtMs: cfg.clock.nowMs() + firstDelayMs,
      stop,
      ttlMs: () => (lease.reserved ? cfg.reservationTtlMs : cfg.leaseTtlMs),
      send: (ttlMs, signal) =>
        cfg.backend.renewClaim(
          { claimName: this.name, generationId: cfg.generationId, token: lease.token, ttlMs },
          { signal },
        ),
      isRefusal: (err) => REFUSED.some((code) => hasCode(err, code)),
      renewed: (record) => {
        if (record.ownerGeneration !== cfg.generationId || record.fencingToken !== lease.token) {
          return new ShiftlockError("not_owner", "renew returned another owner", { claim: record });
        }
        events.emit("claim.renewed", { claim: this.name, token: lease.token, deadlineMs: lease.deadlineMs });
        return undefined;
      },
      failed: (error) => events.emit("error", { op: "renew", claim: this.name, error: error as Error }),
      paused: () => this.committing,
      lost: (error) => this.lose(lease, error),
      deadlineError: () =>
        new ShiftlockError("lease_lost", "no successful renew before the deadline", { claim: this.name }),
    }).catch((err: unknown) => {
      // keepAlive never rejects by itself; a throwing hook must not become an unhandled rejection.
      events.emit("error", { op: "renew-loop", claim: this.name, error: err as Error });
    });
  }
}
