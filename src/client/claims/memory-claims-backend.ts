/**
 * `MemoryClaimsBackend`: an in-process {@link ClaimsBackend} for tests and local tools,
 * built on the server's own pure machines.
 *
 * Guarantees:
 * - Same rules as the service: claims are decided by `decideClaim`, generations by
 *   `decideRegister`/`decidePatch`, requests are validated by the same zod schemas (same
 *   `invalid_request` field), and answers are rendered to the wire form and decoded by
 *   the same code as the HTTP client — so a test that passes here asserts what the real
 *   service does (the contract suite runs against both).
 * - Operation-id replay per claim with the server's semantics (first status and body,
 *   `operation_id_conflict` for a different request, 409s remembered, 400s not).
 * - Expiry is applied lazily on every call *and* by a timer on the injected {@link Clock}
 *   armed at each claim's deadline, so a watcher hears `expired` when a `ManualClock` is
 *   advanced past it, without anyone touching the claim.
 * - Every call is atomic (no await between decide and save); `signal` is checked on entry.
 *
 * Does not: persist anything, close slow watchers (buffers are unbounded), or enforce
 * auth/namespaces (one backend is one namespace).
 *
 * @example
 * const clock = new ManualClock();
 * const claims = new MemoryClaimsBackend({ clock });
 * const a = await claims.acquireClaim({ claimName: "c", generationId: "a", ttlMs: 1_000 });
 * await clock.advance(1_001); // the claim expires; watchers get `expired`
 */
import type { z } from "zod";
import type { ClaimCommand } from "../../core/claim-machine.ts";
import { emptyClaim, nextDeadlineMs } from "../../core/claim-machine.ts";
import { requestFingerprint } from "../../core/claim-operations.ts";
import {
  decideRegister,
  decidePatch,
  generationDecisionToResponse,
  type GenerationDecision,
} from "../../core/generation-machine.ts";
import {
  abortBodySchema,
  acquireBodySchema,
  commitBodySchema,
  prepareBodySchema,
  releaseBodySchema,
  renewBodySchema,
} from "../../protocol/claims.ts";
import { systemClock, type Clock } from "../../core/clock.ts";
import { ShiftlockError } from "../../protocol/errors.ts";
import { patchGenerationBodySchema, registerGenerationBodySchema } from "../../protocol/generations.ts";
import { invalidFromZod } from "../../protocol/zod-invalid.ts";
import type {
  AbortRequest,
  AcquireRequest,
  CallOptions,
  ClaimRecord,
  ClaimsBackend,
  ClaimWatch,
  ClaimWatchItem,
  CommitRequest,
  GenerationRecord,
  RegisterGenerationRequest,
  ReleaseRequest,
  RenewRequest,
  TransferRequest,
  UpdateGenerationRequest,
  WatchClaimOptions,
} from "./claims-backend.ts";
import { decodeClaimAnswer, decodeGenerationAnswer } from "./decode.ts";
import { encodeJson } from "../transport/http-transport.ts";
import { MemoryClaimSlot } from "./memory-claim-slot.ts";
import { checkCounter, checkPathName } from "../transport/path-names.ts";
import { WatchQueue } from "../transport/watch-queue.ts";

export interface MemoryClaimsBackendOptions {
  /** Time source and expiry timers. Default: the system clock. Tests pass a `ManualClock`. */
  clock?: Clock;
}

/** Run `fn` now; its result or throw becomes the promise (every call is synchronous inside). */
function settle<T>(fn: () => T): Promise<T> {
  return new Promise<T>((resolve) => resolve(fn()));
}

/** Validate a request exactly as the server does: encode to the wire, parse with the route's schema. */
function validate<S extends z.ZodType>(schema: S, body: Record<string, unknown>): z.output<S> {
  const wire: unknown = JSON.parse(encodeJson(body));
  const parsed = schema.safeParse(wire);
  if (!parsed.success) throw invalidFromZod(parsed.error, "body");
  return parsed.data;
}

export class MemoryClaimsBackend implements ClaimsBackend {
  private readonly clock: Clock;
  private readonly claims = new Map<string, MemoryClaimSlot>();
  private readonly timers = new Map<string, { deadline: number; controller: AbortController }>();
  private readonly generations = new Map<string, GenerationRecord>();
  private closed = false;

  constructor(options: MemoryClaimsBackendOptions = {}) {
    this.clock = options.clock ?? systemClock;
  }

  private slot(name: string): MemoryClaimSlot {
    let s = this.claims.get(name);
    if (s === undefined) {
      s = new MemoryClaimSlot(name);
      this.claims.set(name, s);
    }
    return s;
  }

  private enter(opts: CallOptions | undefined): void {
    opts?.signal?.throwIfAborted();
    if (this.closed) throw new ShiftlockError("invalid_request", "client is closed");
  }

  /** Validate, run one claim command with operation-id replay, re-arm expiry, decode. */
  private mutate(
    route: string,
    req: { claimName: string; operationId?: string | undefined },
    body: Record<string, unknown>,
    schema: z.ZodType,
    command: ClaimCommand,
    opts: CallOptions | undefined,
  ): Promise<ClaimRecord> {
    return settle(() => {
      this.enter(opts);
      checkPathName(req.claimName, "claim");
      validate(schema, body);
      const slot = this.slot(req.claimName);
      const op =
        req.operationId === undefined
          ? undefined
          : { id: req.operationId, fingerprint: requestFingerprint(route, JSON.parse(encodeJson(body)) as object) };
      const answer = slot.run(command, this.clock.nowMs(), op);
      this.arm(slot);
      return decodeClaimAnswer(answer);
    });
  }

  acquireClaim(req: AcquireRequest, opts?: CallOptions): Promise<ClaimRecord> {
    const { claimName: _, ...body } = req;
    const command: ClaimCommand = {
      kind: "acquire",
      generationId: req.generationId,
      ttlMs: req.ttlMs,
      allowEmptyOnly: req.allowEmptyOnly,
    };
    return this.mutate("acquire", req, body, acquireBodySchema, command, opts);
  }

  renewClaim(req: RenewRequest, opts?: CallOptions): Promise<ClaimRecord> {
    const { claimName: _, ...body } = req;
    const command: ClaimCommand = { kind: "renew", generationId: req.generationId, token: req.token, ttlMs: req.ttlMs };
    return this.mutate("renew", req, body, renewBodySchema, command, opts);
  }

  prepareTransfer(req: TransferRequest, opts?: CallOptions): Promise<ClaimRecord> {
    const { claimName: _, ...body } = req;
    const { fromGeneration, toGeneration, token, ttlMs } = req;
    const command: ClaimCommand = { kind: "prepare", fromGeneration, toGeneration, token, ttlMs };
    return this.mutate("transfer/prepare", req, body, prepareBodySchema, command, opts);
  }

  commitTransfer(req: CommitRequest, opts?: CallOptions): Promise<ClaimRecord> {
    const { claimName: _, ...body } = req;
    const { fromGeneration, toGeneration, expectedToken, ttlMs } = req;
    const command: ClaimCommand = { kind: "commit", fromGeneration, toGeneration, expectedToken, ttlMs };
    return this.mutate("transfer/commit", req, body, commitBodySchema, command, opts);
  }

  abortTransfer(req: AbortRequest, opts?: CallOptions): Promise<ClaimRecord> {
    const { claimName: _, ...body } = req;
    const { fromGeneration, toGeneration, expectedToken } = req;
    const command: ClaimCommand = { kind: "abort", fromGeneration, toGeneration, expectedToken };
    return this.mutate("transfer/abort", req, body, abortBodySchema, command, opts);
  }

  releaseClaim(req: ReleaseRequest, opts?: CallOptions): Promise<ClaimRecord> {
    const { claimName: _, ...body } = req;
    const command: ClaimCommand = { kind: "release", generationId: req.generationId, token: req.token };
    return this.mutate("release", req, body, releaseBodySchema, command, opts);
  }

  getClaim(claimName: string, opts?: CallOptions): Promise<ClaimRecord> {
    return settle(() => {
      this.enter(opts);
      checkPathName(claimName, "claim");
      const slot = this.claims.get(claimName);
      if (slot === undefined) throw new ShiftlockError("claim_not_found");
      const answer = slot.run({ kind: "get" }, this.clock.nowMs());
      this.arm(slot);
      return decodeClaimAnswer(answer);
    });
  }

  watchClaim(claimName: string, opts?: WatchClaimOptions): ClaimWatch {
    this.enter(undefined);
    checkPathName(claimName, "claim");
    checkCounter(opts?.afterVersion, "afterVersion");
    const slot = this.slot(claimName);
    // Lazy expiry first, so the snapshot never shows a lease that is already over.
    slot.run({ kind: "expire" }, this.clock.nowMs());
    this.arm(slot);
    const signal = opts?.signal;
    const onAbort = (): void => {
      queue.fail(signal?.reason);
      slot.unsubscribe(queue);
    };
    const queue: WatchQueue<ClaimWatchItem> = new WatchQueue(() => {
      slot.unsubscribe(queue);
      signal?.removeEventListener("abort", onAbort);
    });
    if (signal?.aborted === true) {
      queue.fail(signal.reason);
    } else {
      slot.subscribe(queue, opts?.afterVersion);
      signal?.addEventListener("abort", onAbort, { once: true });
    }
    return queue;
  }

  registerGeneration(req: RegisterGenerationRequest, opts?: CallOptions): Promise<GenerationRecord> {
    return this.generation(() => {
      const body = validate(registerGenerationBodySchema, {
        id: req.id,
        service: req.service,
        instanceId: req.instanceId,
      });
      return decideRegister(this.generations.get(body.id), body, this.clock.nowMs());
    }, opts);
  }

  updateGeneration(req: UpdateGenerationRequest, opts?: CallOptions): Promise<GenerationRecord> {
    return this.generation(() => {
      checkPathName(req.id, "id");
      const body = validate(patchGenerationBodySchema, { state: req.state, reason: req.reason });
      return decidePatch(this.generations.get(req.id), body, this.clock.nowMs());
    }, opts);
  }

  getGeneration(generationId: string, opts?: CallOptions): Promise<GenerationRecord> {
    return settle(() => {
      this.enter(opts);
      checkPathName(generationId, "id");
      const record = this.generations.get(generationId);
      if (record === undefined) throw new ShiftlockError("generation_not_found");
      return record;
    });
  }

  private generation(decide: () => GenerationDecision, opts: CallOptions | undefined): Promise<GenerationRecord> {
    return settle(() => {
      this.enter(opts);
      const decision = decide();
      if (decision.ok && decision.changed) this.generations.set(decision.record.id, decision.record);
      return decodeGenerationAnswer(generationDecisionToResponse(decision));
    });
  }

  /**
   * Test hook: set a claim's fencing token (creating the claim unowned if needed), e.g.
   * to the maximum to exercise `token_overflow`. Not part of {@link ClaimsBackend}.
   */
  forceSetToken(claimName: string, token: bigint): void {
    checkPathName(claimName, "claim");
    const slot = this.slot(claimName);
    slot.run({ kind: "expire" }, this.clock.nowMs());
    const base = slot.record ?? emptyClaim(claimName);
    slot.record = { ...base, fencingToken: token };
  }

  close(): Promise<void> {
    this.closed = true;
    for (const t of this.timers.values()) t.controller.abort();
    this.timers.clear();
    for (const s of this.claims.values()) s.endWatchers();
    return Promise.resolve();
  }

  /** (Re-)arm the expiry timer of a claim at its deadline on the injected clock. */
  private arm(slot: MemoryClaimSlot): void {
    const deadline = nextDeadlineMs(slot.record);
    const previous = this.timers.get(slot.name);
    if (previous !== undefined && previous.deadline === deadline) return; // already armed there
    previous?.controller.abort();
    this.timers.delete(slot.name);
    if (deadline === undefined || this.closed) return;
    const armed = { deadline, controller: new AbortController() };
    this.timers.set(slot.name, armed);
    this.clock.sleep(deadline - this.clock.nowMs(), armed.controller.signal).then(
      () => {
        if (this.timers.get(slot.name) !== armed) return;
        this.timers.delete(slot.name);
        slot.run({ kind: "expire" }, this.clock.nowMs());
        this.arm(slot);
      },
      () => {},
    );
  }
}
