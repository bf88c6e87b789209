/**
 * Handoff: moving every claim of a generation to a named successor generation, on the old
 * owner's side — drain → transfer (prepare every claim) → commit every claim, or abort every
 * claim; `drain: "before-commit"` swaps drain and transfer (handoff-types.ts `DrainPoint`).
 *
 * Guarantees:
 * - Each step over the claims (prepare, commit, a rollback's abort) is one batch request
 *   (docs/protocol.md#batch, batch-steps.ts): chunks of at most 128 claims, sent together,
 *   so a step costs one round trip whatever the number of claims. A refused op of a batch is
 *   handled exactly as a refused single call: it fails (or, for commit, partly fails) the
 *   handoff, and the others' outcomes are used.
 * - All-or-rollback before commit: a drain timeout, a refused or timed-out prepare, an
 *   explicit `abort()` or the transfer timeout aborts every claim of the handoff, in claim
 *   name order; the generation is active again, renewals continue and the drain group
 *   accepts work again.
 * - Commit is idempotent: each claim's commit carries one operation id for the whole
 *   handoff, so a commit whose response was lost is retried safely (and an ambiguous
 *   outcome is settled by reading the claim).
 * - The generation is retired only when every claim is committed to the successor. A
 *   commit that fails for some claims aborts the rest, keeps the generation active with
 *   what it still holds, and fails the handoff for good: a later `commit()` is refused
 *   with `no_transfer` (never "retire anyway", the Go reference's §5.15).
 * - After commit, each old lease's signal fires with reason `transferred`; the successor
 *   owns each claim with token + 1 and the result carries what it needs to adopt them.
 * - Bound sessions (the default) prepare and commit with `bound: true`: the prepare checks
 *   that the successor holds a live lease, the claims stay bound to this generation's epoch
 *   until the commit, and the commit binds each to the successor's current epoch (no
 *   reservation ttl, no renewals while prepared; the transfer timeout still aborts). A
 *   successor that holds no lease (`no_lease`: an unbound session, or one between epochs)
 *   gets that claim the unbound way instead — prepared with the reservation ttl and
 *   committed with the lease ttl, each with a fresh operation id — so a handoff works
 *   whichever kind of session the successor runs.
 *
 * Does not: move work between processes, or keep the successor's claims — the successor's
 * session does that (its lease, or `waitForOwnership` / `adopt`).
 */
import type { ClaimRecord } from "../../protocol/claims.ts";
import { ShiftlockError, hasCode } from "../../protocol/errors.ts";
import type { GenerationState } from "../../protocol/generations.ts";
import type { BatchOp } from "../claims/claims-backend.ts";
import { runStep, runStepWithFallback, type StepOp, type StepOutcome } from "./batch-steps.ts";
import { REFUSED, type SessionClaim } from "./session-claim.ts";
import type { ResolvedConfig } from "./config.ts";
import type { DrainGroup } from "./drain-group.ts";
import type { RuntimeEvents } from "./events.ts";
import type { Lease } from "./lease.ts";
import type { DrainPoint, HandedOffClaim, HandoffResult, HandoffStatus, StepOptions } from "./handoff-types.ts";

/** What a handoff needs from its session. */
export interface HandoffHost {
  readonly cfg: ResolvedConfig;
  readonly events: RuntimeEvents;
  readonly drain: DrainGroup;
  readonly state: GenerationState;
  transition(to: GenerationState, reason: string): void;
  operationId(op: string, claim: string): string;
  /** Every claim committed: retire and stop the session. */
  retire(): void;
  /** The handoff ended (committed, aborted or failed). */
  handoffEnded(handoff: Handoff): void;
}

/** Refusals of an abort that prove the claim is no longer ours (expired, taken or evicted). */
const ABORT_REFUSED = ["no_transfer", "not_owner", "stale_token", "evicted"] as const;

interface Member {
  handle: SessionClaim;
  lease: Lease;
  operationIds: { prepare: string; commit: string; abort: string };
  /** Prepared and committed with `bound: true` (false once the successor answered `no_lease`). */
  bound: boolean;
}

export class Handoff {
  private statusNow: HandoffStatus = "pending";
  private members: Member[] = [];
  private transferDeadlineMs = 0;
  private readonly timerStop = new AbortController();
  private committed: Promise<HandoffResult> | undefined;
  private failure: Error | undefined;
  /** The generation's state when the handoff began (active, or standby with no claims). */
  private readonly fromState: GenerationState;
  /** `before-commit`: the drain has not run yet while the claims are prepared. */
  private drainPending: boolean;

  constructor(
    private readonly host: HandoffHost,
    readonly successor: string,
    handles: SessionClaim[],
    readonly drainPoint: DrainPoint = "before-prepare",
  ) {
    this.fromState = host.state;
    this.drainPending = drainPoint === "before-commit";
    this.members = handles
      .filter((h) => h.lease !== undefined)
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
      .map((handle) => ({
        handle,
        lease: handle.lease!,
        operationIds: {
          prepare: host.operationId("prepare", handle.name),
          commit: host.operationId("commit", handle.name),
          abort: host.operationId("abort", handle.name),
        },
        bound: host.cfg.bound,
      }));
    // Draining later, the generation goes straight to `transferring` (a legal move) then.
    if (this.fromState === "active" && drainPoint === "before-prepare") host.transition("draining", "drain_started");
    host.events.emit("handoff.started", { successor, claims: this.claimNames() });
  }

  get status(): HandoffStatus {
    return this.statusNow;
  }

  /** Claim names in the order every step processes them. */
  claimNames(): string[] {
    return this.members.map((m) => m.handle.name);
  }

  /**
   * Stop new work and wait (≤ drainTimeoutMs) for work in flight. Failure aborts the handoff.
   * With `drain: "before-commit"` it runs once the claims are prepared (commit() runs it).
   */
  async drain(opts: StepOptions = {}): Promise<void> {
    if (this.statusNow === "drained" || (this.drainPoint === "before-commit" && !this.drainPending)) return;
    if (this.drainPoint === "before-commit") {
      this.expect(["prepared"], "drain");
      await this.drainWork(opts);
      this.drainPending = false;
      return;
    }
    this.expect(["pending"], "drain");
    this.statusNow = "draining";
    await this.drainWork(opts);
    this.statusNow = "drained";
  }

  /** The drain itself, with its events; a failure rolls the handoff back. */
  private async drainWork(opts: StepOptions): Promise<void> {
    const { cfg, drain, events } = this.host;
    events.emit("drain.started", { successor: this.successor, inFlight: drain.active });
    // Once prepared, a rollback (the transfer timeout, abort()) ends the wait too.
    const rolledBack = this.timerStop.signal;
    const signal = opts.signal === undefined ? rolledBack : AbortSignal.any([opts.signal, rolledBack]);
    try {
      await drain.wait(cfg.clock, cfg.drainTimeoutMs, this.statusNow === "prepared" ? signal : opts.signal);
    } catch (err) {
      events.emit("drain.failed", { successor: this.successor, error: err as Error });
      if (rolledBack.aborted) {
        // A rollback is under way (the transfer timeout or abort()): that is the outcome.
        throw new ShiftlockError("no_transfer", `handoff was aborted: ${this.failure?.message ?? "aborted"}`, {
          reason: "aborted",
        });
      }
      await this.rollback(err as Error);
      throw err;
    }
    events.emit("drain.completed", { successor: this.successor });
  }

  /**
   * Prepare every claim for the successor (draining first if needed). Any failure aborts
   * every claim of the handoff and rethrows the first failure in claim order.
   */
  async transfer(opts: StepOptions = {}): Promise<void> {
    if (this.statusNow === "prepared") return;
    if (this.statusNow === "pending" && this.drainPoint === "before-prepare") await this.drain(opts);
    this.expect([this.drainPoint === "before-prepare" ? "drained" : "pending"], "transfer");
    this.statusNow = "transferring";
    const { cfg, events } = this.host;
    if (this.fromState === "active") this.host.transition("transferring", "transfer_prepared");
    this.transferDeadlineMs = cfg.clock.nowMs() + cfg.transferTimeoutMs;
    const firstFailure = (await this.prepareAll(opts.signal)).find((e) => e !== undefined);
    if (firstFailure !== undefined) {
      await this.rollback(firstFailure);
      throw firstFailure;
    }
    this.statusNow = "prepared";
    for (const m of this.members) {
      events.emit("transfer.prepared", { claim: m.handle.name, token: m.lease.token, successor: this.successor });
    }
    this.armTimeout();
  }

  /**
   * Commit every claim to the successor (running the earlier steps if needed). Idempotent:
   * a second call returns the same result. Resolves once the generation is retired.
   */
  commit(opts: StepOptions = {}): Promise<HandoffResult> {
    this.committed ??= this.commitAll(opts).catch((err: unknown) => {
      this.committed = undefined;
      throw err;
    });
    return this.committed;
  }

  /**
   * Abort the handoff: every prepared claim returns to this generation (token unchanged),
   * renewals continue and new work is accepted again. Idempotent; refused after commit.
   */
  async abort(reason = "aborted"): Promise<void> {
    if (this.statusNow === "aborted") return;
    if (this.statusNow === "committed" || this.statusNow === "committing") {
      throw new ShiftlockError("invalid_state", `handoff already ${this.statusNow}`, { reason: this.statusNow });
    }
    await this.rollback(new ShiftlockError("no_transfer", `handoff aborted: ${reason}`, { reason }));
  }

  private async commitAll(opts: StepOptions): Promise<HandoffResult> {
    if (this.statusNow === "committed") return this.result([]);
    if (this.statusNow === "aborted") {
      throw new ShiftlockError("no_transfer", `handoff was aborted: ${this.failure?.message ?? "aborted"}`, {
        reason: "aborted",
      });
    }
    if (this.statusNow !== "prepared") await this.transfer(opts);
    if (this.drainPending) {
      await this.drain(opts);
      // The transfer timeout may have aborted the handoff while the work drained.
      if ((this.statusNow as HandoffStatus) !== "prepared") {
        throw new ShiftlockError("no_transfer", `handoff was aborted: ${this.failure?.message ?? "aborted"}`, {
          reason: "aborted",
        });
      }
    }
    this.statusNow = "committing";
    for (const m of this.members) m.handle.committing = true;
    const settled = await this.commitEvery();
    const done = settled.filter((s): s is HandedOffClaim => !(s instanceof Error));
    const failed = this.members.filter((_m, i) => settled[i] instanceof Error);
    for (const m of this.members) m.handle.committing = false;
    for (const c of done) {
      const m = this.members.find((x) => x.handle.name === c.claim)!;
      m.handle.endLease("transferred");
      this.host.events.emit("transfer.committed", { claim: c.claim, token: c.token, successor: this.successor });
    }
    if (failed.length === 0) {
      this.timerStop.abort();
      this.statusNow = "committed";
      const result = this.result(done);
      this.host.events.emit("handoff.completed", { successor: this.successor, claims: this.claimNames() });
      this.host.retire();
      this.host.handoffEnded(this);
      this.committed = Promise.resolve(result);
      return result;
    }
    // Some claims moved, some did not: give back what did not and stay active with it.
    const firstError = settled.find((s) => s instanceof Error)!;
    const error = new ShiftlockError(
      firstError instanceof ShiftlockError ? firstError.code : "internal",
      `handoff commit failed for ${failed.map((m) => m.handle.name).join(", ")}: ${firstError.message}`,
      { committed: done.map((c) => c.claim), failed: failed.map((m) => m.handle.name) },
      { cause: firstError },
    );
    this.members = failed;
    await this.rollback(error);
    throw error;
  }

  /**
   * Prepare every claim in one batch: the failure of each member in claim order
   * (undefined: prepared). A lease that already ended is not sent (`not_owner`).
   */
  private async prepareAll(signal: AbortSignal | undefined): Promise<(Error | undefined)[]> {
    const { cfg } = this.host;
    const sending = this.members.filter((m) => m.lease.held);
    const outcomes = await this.stepWithFallback(sending, "prepare", signal, (m) => ({
      op: "prepare",
      ...this.opOf(m, "prepare"),
      token: m.lease.token,
      ...(m.bound ? { bound: true } : { ttlMs: cfg.reservationTtlMs }),
    }));
    return this.members.map((m) => {
      const i = sending.indexOf(m);
      const outcome = outcomes[i];
      if (outcome === undefined) {
        return new ShiftlockError("not_owner", `lease on ${JSON.stringify(m.handle.name)} ended before transfer`, {
          claim: m.handle.name,
        });
      }
      if (!outcome.ok) {
        // A refused prepare proves this epoch is over (`not_owner`, `stale_token`, gone): the lease is lost.
        if (REFUSED.some((code) => hasCode(outcome.error, code))) m.handle.lose(m.lease, outcome.error);
        return outcome.error;
      }
      // The local deadline stays the last renew's bound: a renew in flight may be applied
      // after this prepare and shorten the expiry again. From now on renewals carry the
      // reservation ttl.
      m.handle.setReserved(m.lease, true);
      return undefined;
    });
  }

  /**
   * One step over `members` in batches; a bound op the successor refuses `no_lease` is sent
   * once more unbound, under a fresh operation id (see the module doc).
   */
  private stepWithFallback(
    members: Member[],
    step: "prepare" | "commit",
    signal: AbortSignal | undefined,
    opOf: (m: Member) => BatchOp,
  ): Promise<StepOutcome[]> {
    const { cfg } = this.host;
    const item = (m: Member): StepOp => ({ op: opOf(m), untilMs: this.transferDeadlineMs });
    const retryAs = (i: number, outcome: StepOutcome): StepOp | undefined => {
      const m = members[i]!;
      if (!m.bound || outcome.ok || !hasCode(outcome.error, "no_lease")) return undefined;
      m.bound = false;
      m.operationIds[step] = this.host.operationId(step, m.handle.name);
      return item(m);
    };
    return runStepWithFallback(cfg.backend, cfg.clock, members.map(item), retryAs, signal);
  }

  /** Commit every claim in one batch: each member's hand-over, or its error, in claim order. */
  private async commitEvery(): Promise<(HandedOffClaim | Error)[]> {
    const { cfg } = this.host;
    const sentAt = cfg.clock.nowMs();
    const outcomes = await this.stepWithFallback(this.members, "commit", undefined, (m) => ({
      op: "commit",
      ...this.opOf(m, "commit"),
      expectedToken: m.lease.token,
      ...(m.bound ? { bound: true } : { ttlMs: cfg.leaseTtlMs }),
    }));
    return Promise.all(
      this.members.map(async (m, i) => {
        const outcome = outcomes[i]!;
        if (outcome.ok) return this.handedOff(m, outcome.claim, sentAt);
        // Ambiguous (no answer in time) or refused: the claim itself says what happened.
        try {
          const record = await cfg.backend.getClaim(m.handle.name);
          if (record.ownerGeneration === this.successor && record.fencingToken === m.lease.token + 1n) {
            return this.handedOff(m, record, sentAt);
          }
        } catch {
          // Unreadable: treat as not committed; the abort below settles it.
        }
        return outcome.error;
      }),
    );
  }

  /** What every op of a step carries for member `m`. */
  private opOf(m: Member, step: keyof Member["operationIds"]) {
    const { generationId } = this.host.cfg;
    const operationId = m.operationIds[step];
    return { claimName: m.handle.name, fromGeneration: generationId, toGeneration: this.successor, operationId };
  }

  private handedOff(m: Member, record: ClaimRecord, sentAt: number): HandedOffClaim {
    return {
      claim: m.handle.name,
      previousToken: m.lease.token,
      token: record.fencingToken,
      record,
      deadlineMs: sentAt + this.host.cfg.leaseTtlMs,
    };
  }

  /** Abort every still-held claim in name order, then give the generation its work back. */
  private async rollback(error: Error): Promise<void> {
    const { cfg, events, drain } = this.host;
    this.timerStop.abort();
    this.failure = error;
    const aborting = this.members.filter((m) => m.lease.reserved && m.lease.held);
    const outcomes = await runStep(
      cfg.backend,
      cfg.clock,
      aborting.map((m) => ({
        op: { op: "abort", ...this.opOf(m, "abort"), expectedToken: m.lease.token },
        untilMs: m.lease.deadlineMs - cfg.safetyMarginMs,
      })),
    );
    aborting.forEach((m, i) => {
      const outcome = outcomes[i]!;
      if (outcome.ok) {
        m.handle.setReserved(m.lease, false);
        events.emit("transfer.aborted", {
          claim: m.handle.name,
          token: m.lease.token,
          successor: this.successor,
          reason: error.message,
        });
      } else if (ABORT_REFUSED.some((code) => hasCode(outcome.error, code))) {
        // The reservation is gone and the claim is not ours (expired or taken): a loss.
        m.handle.lose(m.lease, outcome.error);
      } else {
        events.emit("error", { op: "abort", claim: m.handle.name, error: outcome.error });
      }
    });
    this.statusNow = "aborted";
    drain.reopen();
    const stillHeld = this.members.some((m) => m.lease.held);
    if (this.fromState === "active" && this.host.state !== "active") {
      this.host.transition(stillHeld ? "active" : "standby", "rollback");
    }
    events.emit("handoff.failed", { successor: this.successor, error });
    this.host.handoffEnded(this);
  }

  private armTimeout(): void {
    const { cfg } = this.host;
    const delay = Math.max(0, this.transferDeadlineMs - cfg.clock.nowMs());
    cfg.clock.sleep(delay, this.timerStop.signal).then(
      async () => {
        if (this.statusNow !== "prepared") return;
        await this.abort("transfer_timeout").catch((err: unknown) => {
          this.host.events.emit("error", { op: "transfer-timeout", error: err as Error });
        });
      },
      () => undefined,
    );
  }

  private expect(allowed: HandoffStatus[], step: string): void {
    if (!allowed.includes(this.statusNow)) {
      throw new ShiftlockError("invalid_state", `cannot ${step}: handoff is ${this.statusNow}`, {
        reason: this.statusNow,
      });
    }
  }

  private result(claims: HandedOffClaim[]): HandoffResult {
    return { successor: this.successor, claims };
  }
}
