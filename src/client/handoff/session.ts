/**
 * GenerationSession: one deployment generation of a service — it registers, keeps the
 * generation's lease that its claims are bound to (or, unbound, the renew loops of its
 * claims), tracks in-flight work, hands its claims to a successor, and closes. Shaped after
 * etcd's `concurrency.Session`: claims hang off the session, and closing the session ends
 * every lease.
 *
 * Guarantees:
 * - Config is validated at construction (`invalid_request` naming the field).
 * - Bound (the default): one lease per session (session-lease.ts), started at registration
 *   — `open()` resolves once the server confirmed its first epoch, so a successor is ready
 *   for a handoff to bind its claims — and kept by one keepalive loop whatever the number of
 *   claims; no claim is renewed on its own.
 * - Every generation state change goes through the protocol's legal-transition table
 *   (`src/core/generation-machine.ts`) before it is applied locally and sent to the server
 *   (PATCHes are sent in order; a refused PATCH is reported as an `error` event).
 * - No new claim is acquired while a handoff is in progress or after the session retired.
 * - `close()` ends every lease (signals fire), stops every renew loop, the session's lease
 *   and every pending wait, releases held claims on the server unless `{ release: false }`,
 *   and retires the generation (which ends the generation's lease on the server, and with it
 *   any bound claim left). It is idempotent.
 * - Operation ids (`<generation>:<op>:<claim>:<seq>`) are valid names whatever the names
 *   involved (ids.ts), unique per step; a retried step reuses its id.
 * - What claims and handoffs need from the session (acquire checks, operation ids,
 *   retiring) is an internal host object, not a member of the class: the public API is
 *   what a service calls.
 *
 * Does not: make claims depend on generation state (the server never checks it; fencing
 * tokens are the safety mechanism), or survive a process restart (a restarted process is
 * a new generation; its old claims expire or are handed off).
 */
import type { GenerationState } from "../../protocol/generations.ts";
import { ShiftlockError } from "../../protocol/errors.ts";
import { nameProblem } from "../../protocol/names.ts";
import { canTransition } from "../../core/generation-machine.ts";
import { ClaimHandle } from "./claim-handle.ts";
import { SessionClaim, type SessionContext } from "./session-claim.ts";
import { SessionLease } from "./session-lease.ts";
import { resolveConfig, type GenerationSessionConfig, type ResolvedConfig } from "./config.ts";
import { DrainGroup } from "./drain-group.ts";
import { RuntimeEvents, type RuntimeEvent, type RuntimeEventType, type RuntimeListener } from "./events.ts";
import { Handoff, type HandoffHost } from "./handoff.ts";
import type { DrainPoint, HandoffResult, StepOptions } from "./handoff-types.ts";
import { operationId } from "./ids.ts";

export interface CloseOptions {
  /** Release held claims on the server so a successor need not wait for expiry; default true. */
  release?: boolean;
}

export class GenerationSession implements AsyncDisposable {
  /** The validated configuration, defaults applied. */
  readonly cfg: ResolvedConfig;
  /** In-flight work of this generation; a handoff drains it. */
  readonly drain = new DrainGroup();
  private readonly events: RuntimeEvents;
  private stateNow: GenerationState = "joining";
  private readonly claims = new Map<string, { claim: SessionClaim; handle: ClaimHandle }>();
  private readonly closeController = new AbortController();
  private stateChain: Promise<void> = Promise.resolve();
  private seq = 0;
  private current: Handoff | undefined;
  /** The generation's lease its claims are bound to (undefined: `bound: false`). */
  private readonly lease: SessionLease | undefined;
  /** What the session's claims and handoffs may ask of it. */
  private readonly host: SessionContext & HandoffHost;

  /** Validate the config. Call {@link register} (or use {@link GenerationSession.open}) next. */
  constructor(config: GenerationSessionConfig) {
    this.cfg = resolveConfig(config);
    this.events = new RuntimeEvents(this.cfg.generationId, () => this.cfg.clock.nowMs());
    this.lease = this.cfg.bound ? new SessionLease({ cfg: this.cfg, events: this.events }) : undefined;
    const state = (): GenerationState => this.stateNow;
    this.host = {
      cfg: this.cfg,
      events: this.events,
      drain: this.drain,
      lease: this.lease,
      get state() {
        return state();
      },
      closedSignal: this.closeController.signal,
      assertCanAcquire: () => this.assertCanAcquire(),
      noteAcquired: () => {
        if (this.stateNow !== "active") this.transition("active", "acquired");
      },
      operationId: (op, claim) => operationId(this.cfg.generationId, op, claim, ++this.seq),
      transition: (to, reason) => this.transition(to, reason),
      retire: () => this.retire(),
      handoffEnded: (handoff) => {
        if (this.current === handoff) this.current = undefined;
      },
    };
  }

  /**
   * Validate, register the generation (joining → standby) and return the session.
   * @example
   * const session = await GenerationSession.open({ service: "billing", instanceId: "pod-7", backend });
   * const lease = await session.claim("billing-ledger").waitForOwnership();
   */
  static async open(config: GenerationSessionConfig): Promise<GenerationSession> {
    const session = new GenerationSession(config);
    await session.register();
    return session;
  }

  get generationId(): string {
    return this.cfg.generationId;
  }

  /** The generation's state as this process last set it. */
  get state(): GenerationState {
    return this.stateNow;
  }

  /** Aborts when the session closes or retires. */
  get closedSignal(): AbortSignal {
    return this.closeController.signal;
  }

  get closed(): boolean {
    return this.closeController.signal.aborted;
  }

  /** The handoff in progress, if any. */
  get handoffInProgress(): Handoff | undefined {
    return this.current;
  }

  /** Subscribe to one event type; returns the unsubscribe function. */
  on<T extends RuntimeEventType>(type: T, listener: RuntimeListener<T>): () => void {
    return this.events.on(type, listener);
  }

  /** Subscribe to every event. */
  onAny(listener: (event: RuntimeEvent) => unknown): () => void {
    return this.events.onAny(listener);
  }

  /**
   * Register with the service; a fresh generation moves joining → standby. Bound, the
   * session's lease starts too: this resolves once its first epoch is confirmed.
   */
  async register(opts: StepOptions = {}): Promise<void> {
    const record = await this.cfg.backend.registerGeneration(
      { id: this.cfg.generationId, service: this.cfg.service, instanceId: this.cfg.instanceId },
      { signal: opts.signal },
    );
    if (record.state === "retired" || record.state === "failed") {
      throw new ShiftlockError("invalid_state", `generation ${this.cfg.generationId} is already ${record.state}`, {
        reason: record.state,
      });
    }
    this.stateNow = record.state;
    if (record.state === "joining") this.transition("standby", "registered");
    await this.flush();
    await this.lease?.live(opts.signal);
  }

  /**
   * The epoch of the generation's lease this session holds now and the local-clock bound
   * until which the server keeps it (undefined: no live epoch, or `bound: false`).
   */
  get leaseEpoch(): { epoch: bigint; deadlineMs: number } | undefined {
    const term = this.lease?.current;
    return term === undefined ? undefined : { epoch: term.epoch, deadlineMs: term.deadline.deadlineMs };
  }

  /** The handle of a claim (cached per name; no server call). */
  claim(name: string): ClaimHandle {
    if (this.closed) throw closedError();
    const problem = nameProblem(name);
    if (problem !== undefined)
      throw new ShiftlockError("invalid_request", `claim name: ${problem}`, { field: "claim" });
    let entry = this.claims.get(name);
    if (entry === undefined) {
      const claim = new SessionClaim(name, this.host);
      this.claims.set(name, (entry = { claim, handle: new ClaimHandle(claim) }));
    }
    return entry.handle;
  }

  /** Names of the claims this generation currently holds a lease on. */
  heldClaims(): string[] {
    return [...this.claims.values()].filter(({ claim }) => claim.lease !== undefined).map(({ claim }) => claim.name);
  }

  /**
   * Begin a handoff of every held claim to `successor`: the generation moves to draining
   * (a standby generation with no claims stays standby and simply retires on commit).
   * Then call `drain()`, `transfer()`, `commit()` or `abort()` on the result. With
   * `{ drain: "before-commit" }` work continues through `transfer()` (the generation moves to
   * transferring then) and `drain()` — or `commit()` — drains once the claims are prepared.
   */
  prepareHandoff(successor: string, opts: { drain?: DrainPoint } = {}): Handoff {
    if (this.closed) throw closedError();
    const problem = nameProblem(successor);
    if (problem !== undefined)
      throw new ShiftlockError("invalid_request", `successor: ${problem}`, { field: "successor" });
    if (successor === this.cfg.generationId) {
      throw new ShiftlockError("invalid_request", "successor must differ from this generation", { field: "successor" });
    }
    if (this.current !== undefined) {
      throw new ShiftlockError("invalid_state", `a handoff to ${this.current.successor} is in progress`, {
        reason: "handoff_in_progress",
      });
    }
    if (!["active", "standby", "preparing"].includes(this.stateNow)) {
      throw new ShiftlockError("invalid_state", `cannot hand off from state ${this.stateNow}`, {
        reason: this.stateNow,
      });
    }
    this.current = new Handoff(
      this.host,
      successor,
      [...this.claims.values()].map(({ claim }) => claim),
      opts.drain,
    );
    return this.current;
  }

  /**
   * The whole handoff in one call: drain → transfer → commit (with `drain: "before-commit"`:
   * transfer → drain → commit). On any failure the handoff is aborted (claims stay here, the
   * generation is active again) and the error rethrown.
   */
  async handoffTo(successor: string, opts: StepOptions & { drain?: DrainPoint } = {}): Promise<HandoffResult> {
    const handoff = this.prepareHandoff(successor, { drain: opts.drain ?? "before-prepare" });
    try {
      const early = handoff.drainPoint === "before-prepare";
      if (early) await handoff.drain(opts);
      await handoff.transfer(opts);
      if (!early) await handoff.drain(opts);
      return await handoff.commit(opts);
    } catch (err) {
      if (handoff.status !== "aborted" && handoff.status !== "committed") await handoff.abort("failed");
      throw err;
    }
  }

  /**
   * Close the session: abort a handoff that has not committed, end every lease, release
   * held claims (unless `release: false`), retire the generation. Idempotent.
   */
  async close(opts: CloseOptions = {}): Promise<void> {
    if (this.closed) {
      await this.flush();
      return;
    }
    const handoff = this.current;
    if (handoff !== undefined && handoff.status !== "committing") {
      await handoff
        .abort("closed")
        .catch((err: unknown) => this.events.emit("error", { op: "close", error: err as Error }));
    }
    this.closeController.abort(closedError());
    this.drain.close();
    const releases: Promise<void>[] = [];
    for (const { claim } of this.claims.values()) {
      if (opts.release !== false && claim.lease !== undefined) {
        releases.push(
          claim.release().catch((err: unknown) => {
            this.events.emit("error", { op: "close-release", claim: claim.name, error: err as Error });
          }),
        );
      } else {
        claim.endLease("closed");
      }
    }
    await Promise.all(releases);
    this.lease?.close();
    if (this.stateNow !== "retired" && this.stateNow !== "failed") this.transition("retired", "closed");
    await this.flush();
    this.events.emit("closed", {});
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  /** Wait until every generation PATCH sent so far has been answered. */
  flush(): Promise<void> {
    return this.stateChain;
  }

  /**
   * Move the generation to `to` (legal moves only: `invalid_state` otherwise). Applied
   * locally at once; the PATCH is queued behind earlier ones.
   */
  transition(to: GenerationState, reason: string): void {
    const from = this.stateNow;
    if (!canTransition(from, to)) {
      throw new ShiftlockError("invalid_state", `illegal generation transition ${from} -> ${to}`, { from, to });
    }
    this.stateNow = to;
    if (from !== to) this.events.emit("generation.state", { from, to, reason });
    const { backend, generationId } = this.cfg;
    this.stateChain = this.stateChain.then(() =>
      backend.updateGeneration({ id: generationId, state: to, reason }).then(
        () => undefined,
        (err: unknown) => this.events.emit("error", { op: "update-generation", error: err as Error }),
      ),
    );
  }

  private assertCanAcquire(): void {
    if (this.closed) throw closedError();
    if (this.current !== undefined) {
      throw new ShiftlockError("invalid_state", "a handoff is in progress", { reason: "handoff_in_progress" });
    }
    if (!["joining", "standby", "preparing", "active"].includes(this.stateNow)) {
      throw new ShiftlockError("invalid_state", `cannot acquire in state ${this.stateNow}`, { reason: this.stateNow });
    }
  }

  /** Every claim was committed to the successor. */
  private retire(): void {
    this.lease?.close();
    this.transition("retired", "retired");
    this.closeController.abort(closedError());
    this.drain.close();
    for (const { claim } of this.claims.values()) claim.endLease("closed");
    this.events.emit("closed", {});
  }
}

function closedError(): ShiftlockError {
  return new ShiftlockError("invalid_state", "generation session is closed", { reason: "closed" });
}
