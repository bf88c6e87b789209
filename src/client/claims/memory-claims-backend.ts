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
 * - `batch(ops)` checks the batch whole as the route does, then runs each op through the
 *   same path as its single call; each op's answer (or local refusal) is its outcome.
 * - Generation leases (docs/protocol.md#sessions) follow core/generation-lease.ts through the
 *   same generation machine; the end of an epoch (its deadline on the injected clock,
 *   `endGenerationLease`, a final state) reaches every claim bound to it at once, as the
 *   object's delivery does, and bound claims ask the same lease views as the claim object.
 *   `openLeaseChannel` runs the client's lease channel against in-process sockets
 *   (memory-lease-sockets.ts) that keep the lease as the object's channel does.
 *
 * Does not: persist anything, close slow watchers (buffers are unbounded), or enforce
 * auth/namespaces (one backend is one namespace; every caller may evict, and `whoami`
 * answers `{name: "memory", role: "admin"}`).
 *
 * @example
 * const clock = new ManualClock();
 * const claims = new MemoryClaimsBackend({ clock });
 * const a = await claims.acquireClaim({ claimName: "c", generationId: "a", ttlMs: 1_000 });
 * await clock.advance(1_001); // the claim expires; watchers get `expired`
 */
import { inProcess } from "../in-process.ts";
import { commandOf } from "../../core/claim-command.ts";
import { nextDeadlineMs } from "../../core/claim-machine.ts";
import { type LeaseView, leasesWanted } from "../../core/claim-leases.ts";
import { leaseLive } from "../../core/generation-lease.ts";
import { requestFingerprint } from "../../core/claim-operations.ts";
import { systemClock, type Clock } from "../../core/clock.ts";
import {
  decideEndLease,
  decideKeepalive,
  decideRegister,
  decidePatch,
  decideTouch,
  generationDecisionToResponse,
  type GenerationDecision,
} from "../../core/generation-machine.ts";
import { CLAIM_MUTATIONS, claimRoutePath, evictClaim, getClaim, watchClaim } from "../../protocol/claim-routes.ts";
import type { Whoami } from "../../protocol/operators.ts";
import { claimToWire } from "../../protocol/claims.ts";
import { generationToWire } from "../../protocol/generations.ts";
import { listClaims, listGenerations } from "../../protocol/listing-routes.ts";
import { followCursors, memoryPage, type PageOptions } from "../listing.ts";
import type { BatchOpName } from "../../protocol/claims.ts";
import { ShiftlockError } from "../../protocol/errors.ts";
import {
  endGenerationLease,
  generationLeaseChannel,
  getGeneration,
  keepaliveGeneration,
  registerGeneration,
  updateGeneration,
} from "../../protocol/generation-routes.ts";
import { checkPathParams, decodeAnswer, encodeBody, encodeQuery, type WireAnswer } from "../transport/route-codec.ts";
import { WatchQueue } from "../transport/watch-queue.ts";
import type { WebSocketLike } from "../transport/websocket.ts";
import { checkBatch, encodeOp, outcomeOf, settleOp, type EncodedOp } from "./claim-batch.ts";
import type {
  ListClaimsFilter,
  ListGenerationsFilter,
  AbortRequest,
  AcquireRequest,
  BatchOp,
  BatchOutcome,
  CallOptions,
  ClaimRecord,
  ClaimsBackend,
  ClaimWatch,
  ClaimWatchItem,
  CommitRequest,
  EvictRequest,
  GenerationRecord,
  KeepaliveGenerationRequest,
  LeaseChannel,
  LeaseChannelOptions,
  RegisterGenerationRequest,
  ReleaseRequest,
  RenewRequest,
  TransferRequest,
  UpdateGenerationRequest,
  WatchClaimOptions,
} from "./claims-backend.ts";
import { MemoryClaim } from "./memory-claim.ts";
import { MemoryGenerations } from "./memory-generations.ts";
import { openLeaseChannel } from "./lease-channel.ts";
import { MemoryLeaseSockets } from "./memory-lease-sockets.ts";
import { MemoryAlarms } from "../memory-alarms.ts";

export interface MemoryClaimsBackendOptions {
  /** Time source and expiry timers. Default: the system clock. Tests pass a `ManualClock`. */
  clock?: Clock;
  /** The namespace the backend stands for; only fence keys show it. Default `"memory"`. */
  namespace?: string;
}

export class MemoryClaimsBackend implements ClaimsBackend {
  readonly namespace: string;
  /** Time source and expiry timers. */
  protected readonly clock: Clock;
  private readonly claims = new Map<string, MemoryClaim>();
  private readonly alarms: MemoryAlarms;
  private readonly generations: MemoryGenerations;
  private readonly leaseSockets = new MemoryLeaseSockets({
    open: (id, ttlMs) => {
      const decision = decideKeepalive(this.generations.get(id), ttlMs, this.clock.nowMs());
      this.generations.settle(decision);
      return decodeAnswer(keepaliveGeneration, generationDecisionToResponse(decision)).generation;
    },
    ping: (id, ttlMs) => {
      const nowMs = this.clock.nowMs();
      this.generations.settle(decideTouch(this.generations.get(id), nowMs));
      const record = this.generations.get(id);
      if (record !== undefined && leaseLive(record, nowMs))
        this.generations.settle(decideKeepalive(record, ttlMs, nowMs));
    },
  });
  private closed = false;

  constructor(options: MemoryClaimsBackendOptions = {}) {
    this.clock = options.clock ?? systemClock;
    this.alarms = new MemoryAlarms(this.clock);
    this.namespace = options.namespace ?? "memory";
    // An epoch's end reaches every claim at once, as the generation object's delivery does.
    this.generations = new MemoryGenerations(this.clock, (generationId, ended) => {
      for (const claim of this.claims.values()) {
        claim.run({ kind: "lease_ended", generationId, epoch: ended.epoch }, this.clock.nowMs());
        this.arm(claim);
      }
      this.leaseSockets.ended(generationId, ended.epoch, ended.reason);
    });
  }

  /** The claim named `name`, created (never acquired) on first use. */
  protected claimNamed(name: string): MemoryClaim {
    let s = this.claims.get(name);
    if (s === undefined) {
      s = new MemoryClaim(name);
      this.claims.set(name, s);
    }
    return s;
  }

  private enter(opts: CallOptions | undefined): void {
    opts?.signal?.throwIfAborted();
    if (this.closed) throw new ShiftlockError("invalid_request", "client is closed");
  }

  /**
   * One claim mutation, synchronously: check and encode it as its route would (the HTTP
   * client does the same before sending), run it with operation-id replay, re-arm expiry,
   * and return the wire answer — what the claim's Durable Object would have answered.
   */
  private run(op: BatchOp): { route: EncodedOp["route"]; answer: WireAnswer } {
    const { route, claimName, body } = encodeOp(op);
    const claim = this.claimNamed(claimName);
    const operationId = op.operationId;
    const replayKey =
      operationId === undefined
        ? undefined
        : { id: operationId, fingerprint: requestFingerprint(claimRoutePath(op.op), body) };
    const { op: name, claimName: _claim, ...fields } = op;
    const command = commandOf(name, fields);
    const nowMs = this.clock.nowMs();
    // The lease views the claim object would ask its generations for (core/claim-leases.ts).
    const wanted =
      operationId !== undefined && claim.knows(operationId) ? {} : leasesWanted(claim.record, command, nowMs);
    const views = new Map<string, LeaseView>();
    for (const id of [wanted.bind, wanted.peek]) if (id !== undefined) views.set(id, this.generations.view(id));
    const answer = claim.run(command, this.clock.nowMs(), replayKey, views);
    this.arm(claim);
    return { route, answer };
  }

  /**
   * One single call: checked as its route would check it (a field the route does not
   * declare, such as a stray `op`, is `invalid_request` exactly as over HTTP), then run
   * and decoded with the same function as the HTTP client.
   */
  private mutate(
    name: BatchOpName,
    req: AcquireRequest | RenewRequest | TransferRequest | CommitRequest | AbortRequest | ReleaseRequest,
    opts: CallOptions | undefined,
  ): Promise<ClaimRecord> {
    return inProcess(undefined, () => {
      this.enter(opts);
      const { claimName: _claimName, ...body } = req;
      encodeBody(CLAIM_MUTATIONS[name], body);
      const { route, answer } = this.run({ ...req, op: name } as BatchOp);
      return decodeAnswer<EncodedOp["route"]>(route, answer).claim;
    });
  }

  acquireClaim(req: AcquireRequest, opts?: CallOptions): Promise<ClaimRecord> {
    return this.mutate("acquire", req, opts);
  }

  renewClaim(req: RenewRequest, opts?: CallOptions): Promise<ClaimRecord> {
    return this.mutate("renew", req, opts);
  }

  prepareTransfer(req: TransferRequest, opts?: CallOptions): Promise<ClaimRecord> {
    return this.mutate("prepare", req, opts);
  }

  commitTransfer(req: CommitRequest, opts?: CallOptions): Promise<ClaimRecord> {
    return this.mutate("commit", req, opts);
  }

  abortTransfer(req: AbortRequest, opts?: CallOptions): Promise<ClaimRecord> {
    return this.mutate("abort", req, opts);
  }

  releaseClaim(req: ReleaseRequest, opts?: CallOptions): Promise<ClaimRecord> {
    return this.mutate("release", req, opts);
  }

  /** The eviction route's rules (docs/protocol.md#eviction) through the same machine as the object. */
  evictClaim(req: EvictRequest, opts?: CallOptions): Promise<ClaimRecord> {
    return inProcess(undefined, () => {
      this.enter(opts);
      checkPathParams(evictClaim, { claim: req.claimName });
      encodeBody(evictClaim, { note: req.note });
      const claim = this.claims.get(req.claimName);
      if (claim === undefined) throw new ShiftlockError("claim_not_found");
      const answer = claim.run({ kind: "evict", note: req.note }, this.clock.nowMs());
      this.arm(claim);
      return decodeAnswer(evictClaim, answer).claim;
    });
  }

  /** No tokens in process: the caller stands for an operator of its own backend. */
  whoami(opts?: CallOptions): Promise<Whoami> {
    return inProcess(undefined, () => {
      this.enter(opts);
      return { name: "memory", role: "admin" };
    });
  }

  /**
   * The batch route's semantics (docs/protocol.md#batch) in process: the batch is checked whole first,
   * then every op runs through the same path as its single call, in order; each op's
   * answer or local refusal is its outcome.
   */
  batch(ops: readonly BatchOp[], opts?: CallOptions): Promise<BatchOutcome[]> {
    return inProcess(undefined, () => {
      this.enter(opts);
      checkBatch(ops);
      return ops.map((op) =>
        settleOp(() => {
          const { route, answer } = this.run(op);
          return outcomeOf(route, answer);
        }),
      );
    });
  }

  getClaim(claimName: string, opts?: CallOptions): Promise<ClaimRecord> {
    return inProcess(undefined, () => {
      this.enter(opts);
      checkPathParams(getClaim, { claim: claimName });
      const claim = this.claims.get(claimName);
      if (claim === undefined) throw new ShiftlockError("claim_not_found");
      const answer = claim.run({ kind: "get" }, this.clock.nowMs());
      this.arm(claim);
      return decodeAnswer(getClaim, answer).claim;
    });
  }

  watchClaim(claimName: string, opts?: WatchClaimOptions): ClaimWatch {
    this.enter(undefined);
    checkPathParams(watchClaim, { claim: claimName });
    encodeQuery(watchClaim, { afterVersion: opts?.afterVersion });
    const claim = this.claimNamed(claimName);
    // Lazy expiry first, so the snapshot never shows a lease that is already over.
    claim.run({ kind: "expire" }, this.clock.nowMs());
    this.arm(claim);
    const signal = opts?.signal;
    const onAbort = (): void => {
      queue.fail(signal?.reason);
      claim.unsubscribe(queue);
    };
    const queue: WatchQueue<ClaimWatchItem> = new WatchQueue(() => {
      claim.unsubscribe(queue);
      signal?.removeEventListener("abort", onAbort);
    });
    if (signal?.aborted === true) {
      queue.fail(signal.reason);
    } else {
      claim.subscribe(queue, opts?.afterVersion);
      signal?.addEventListener("abort", onAbort, { once: true });
    }
    return queue;
  }

  registerGeneration(req: RegisterGenerationRequest, opts?: CallOptions): Promise<GenerationRecord> {
    return this.generation(
      registerGeneration,
      () => {
        const body = { id: req.id, service: req.service, instanceId: req.instanceId };
        encodeBody(registerGeneration, body);
        return decideRegister(this.generations.get(body.id), body, this.clock.nowMs());
      },
      opts,
    );
  }

  updateGeneration(req: UpdateGenerationRequest, opts?: CallOptions): Promise<GenerationRecord> {
    return this.generation(
      updateGeneration,
      () => {
        checkPathParams(updateGeneration, { id: req.id });
        const body = { state: req.state, reason: req.reason };
        encodeBody(updateGeneration, body);
        return decidePatch(this.generations.get(req.id), body, this.clock.nowMs());
      },
      opts,
    );
  }

  listClaims(filter: ListClaimsFilter = {}, opts: PageOptions = {}): AsyncIterable<ClaimRecord> {
    const filters = [filter.prefix, filter.phase, filter.owner];
    return followCursors((cursor) =>
      inProcess(undefined, () => {
        this.enter(opts);
        const nowMs = this.clock.nowMs();
        const items = [...this.claims.values()].flatMap((claim) => {
          // Lazy expiry, as a read of the claim would apply it.
          if (claim.record !== undefined) claim.run({ kind: "expire" }, nowMs);
          return claim.record === undefined ? [] : [{ key: claim.name, wire: claimToWire(claim.record) }];
        });
        const page = memoryPage({
          route: listClaims,
          field: "claims",
          scope: { namespace: "", list: "claims", filters },
          query: { prefix: filter.prefix, phase: filter.phase, owner: filter.owner, limit: opts.limit, cursor },
          items,
          keep: (c) =>
            (filter.prefix === undefined || c.name.startsWith(filter.prefix)) &&
            (filter.phase === undefined || c.phase === filter.phase) &&
            (filter.owner === undefined || c.ownerGeneration === filter.owner),
        });
        return { items: page.claims, cursor: page.cursor };
      }),
    );
  }

  listGenerations(filter: ListGenerationsFilter = {}, opts: PageOptions = {}): AsyncIterable<GenerationRecord> {
    return followCursors((cursor) =>
      inProcess(undefined, () => {
        this.enter(opts);
        const page = memoryPage({
          route: listGenerations,
          field: "generations",
          scope: { namespace: "", list: "generations", filters: [filter.service, filter.state] },
          query: { service: filter.service, state: filter.state, limit: opts.limit, cursor },
          items: this.generations.all().map((g) => ({ key: g.id, wire: generationToWire(g) })),
          keep: (g) =>
            (filter.service === undefined || g.service === filter.service) &&
            (filter.state === undefined || g.state === filter.state),
        });
        return { items: page.generations, cursor: page.cursor };
      }),
    );
  }

  getGeneration(generationId: string, opts?: CallOptions): Promise<GenerationRecord> {
    return this.generation(
      getGeneration,
      () => {
        checkPathParams(getGeneration, { id: generationId });
        return decideTouch(this.generations.get(generationId), this.clock.nowMs());
      },
      opts,
    );
  }

  keepaliveGeneration(req: KeepaliveGenerationRequest, opts?: CallOptions): Promise<GenerationRecord> {
    return this.generation(
      keepaliveGeneration,
      () => {
        checkPathParams(keepaliveGeneration, { id: req.id });
        encodeBody(keepaliveGeneration, { ttlMs: req.ttlMs, operationId: req.operationId });
        return decideKeepalive(this.generations.get(req.id), req.ttlMs, this.clock.nowMs());
      },
      opts,
    );
  }

  endGenerationLease(generationId: string, opts?: CallOptions): Promise<GenerationRecord> {
    return this.generation(
      endGenerationLease,
      () => {
        checkPathParams(endGenerationLease, { id: generationId });
        return decideEndLease(this.generations.get(generationId), this.clock.nowMs());
      },
      opts,
    );
  }

  /** Run a generation decision, store it, and decode its wire answer (a copy, as over HTTP). */
  private generation(
    route:
      | typeof registerGeneration
      | typeof updateGeneration
      | typeof getGeneration
      | typeof keepaliveGeneration
      | typeof endGenerationLease,
    decide: () => GenerationDecision,
    opts: CallOptions | undefined,
  ): Promise<GenerationRecord> {
    return inProcess(undefined, () => {
      this.enter(opts);
      const decision = decide();
      this.generations.settle(decision);
      return decodeAnswer(route, generationDecisionToResponse(decision)).generation;
    });
  }

  /** See {@link ClaimsBackend.openLeaseChannel}: the client's channel over in-process sockets. */
  openLeaseChannel(generationId: string, opts: LeaseChannelOptions): LeaseChannel {
    this.enter(undefined);
    checkPathParams(generationLeaseChannel, { id: generationId });
    encodeQuery(generationLeaseChannel, { ttlMs: opts.ttlMs });
    return openLeaseChannel({
      url: `memory:lease/${encodeURIComponent(generationId)}`,
      connect: () => {
        this.enter(undefined);
        return this.connectLeaseSocket(generationId, opts.ttlMs);
      },
      probe: async (signal) => {
        await this.getGeneration(generationId, { signal });
      },
      clock: this.clock,
      signal: opts.signal,
      pingIntervalMs: opts.pingIntervalMs,
      reconnectMinMs: 100,
      reconnectMaxMs: 5_000,
    });
  }

  /** One connection of a lease channel (tests override it to black-hole or delay frames). */
  protected connectLeaseSocket(generationId: string, ttlMs: number): WebSocketLike {
    return this.leaseSockets.connect(generationId, ttlMs);
  }

  close(): Promise<void> {
    this.closed = true;
    this.leaseSockets.closeAll();
    this.alarms.close();
    this.generations.close();
    for (const s of this.claims.values()) s.endWatchers();
    return Promise.resolve();
  }

  /** (Re-)arm the expiry timer of a claim at its deadline on the injected clock. */
  private arm(claim: MemoryClaim): void {
    this.alarms.arm(claim.name, nextDeadlineMs(claim.record), () => {
      claim.run({ kind: "expire" }, this.clock.nowMs());
      this.arm(claim);
    });
  }
}
