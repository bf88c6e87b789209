/**
 * `ClaimsBackend`: the Go interface's shiftlock `Backend` interface in TypeScript.
 *
 * Guarantees (every implementation: HTTP and in-memory):
 * - All ownership mutations are atomic: at most one generation holds a committed fencing
 *   token of a claim at a time; tokens are `bigint` and never decrease.
 * - Refusals reject with {@link ShiftlockError} carrying a protocol error code (`claim_held`,
 *   `stale_token`, …); the same code for the same situation in every implementation.
 * - Passing an `operationId` makes a mutation safe to retry: the retry returns the first
 *   result without side effects.
 * - `signal` cancels the wait for a response; it does not undo a mutation the server may
 *   already have applied (retry with the same `operationId` to find out).
 * - `batch(ops)` runs up to 128 mutations of distinct claims in one call
 *   (one request over HTTP, docs/protocol.md#operating-at-scale). Each op's outcome is a value — the record its single
 *   call would resolve with, or the error it would reject with — so one refused op never
 *   hides the others'. Only what fails every op rejects the call (a malformed batch:
 *   0 or more than 128 ops or a claim twice → `invalid_request`; auth; no answer at all).
 *
 * Does not: validate generation registration (an unregistered id may acquire), or renew
 * leases on its own (the handoff runtime does that).
 */
import type { BatchOpName, ClaimEventReason, ClaimPhase, ClaimRecord } from "../../protocol/claims.ts";
import type { ClaimBodies, ClaimMutationName, evictClaim } from "../../protocol/claim-routes.ts";
import type { RouteBody } from "../../protocol/route.ts";
import type { PageOptions } from "../listing.ts";
import type { ShiftlockError } from "../../protocol/errors.ts";
import type { GenerationRecord, GenerationState, LeaseEndReason } from "../../protocol/generations.ts";
import type { Whoami } from "../../protocol/operators.ts";

export type { BatchOpName, ClaimRecord, ClaimEventReason, GenerationRecord, GenerationState, Whoami };

/** Filters of {@link ClaimsBackend.listClaims}. */
export interface ListClaimsFilter {
  /** Only names starting with this. */
  prefix?: string | undefined;
  phase?: ClaimPhase | undefined;
  /** Only claims owned by this generation. */
  owner?: string | undefined;
}

/** Filters of {@link ClaimsBackend.listGenerations}. */
export interface ListGenerationsFilter {
  service?: string | undefined;
  state?: GenerationState | undefined;
}

export type { PageOptions };

/** Per-call options. */
export interface CallOptions {
  /** Cancels waiting for the call (Go's context). */
  signal?: AbortSignal | undefined;
}

/**
 * The request of a claim mutation: the claim's name and the route's body (tokens as bigint),
 * derived from the route declaration so a field added there is a field here.
 * @example
 * { claimName: "ledger", generationId: "g1", ttlMs: 15_000 } // AcquireRequest
 */
export type ClaimMutationRequest<K extends ClaimMutationName> = { claimName: string } & ClaimBodies[K];

/** `allowEmptyOnly`: only acquire when nobody (not even the caller) holds the claim. */
export type AcquireRequest = ClaimMutationRequest<"acquire">;
export type RenewRequest = ClaimMutationRequest<"renew">;
/** A transfer's prepare: `ttlMs` is how long the reservation holds before it expires. */
export type TransferRequest = ClaimMutationRequest<"prepare">;
/** A transfer's commit: `ttlMs` is the successor's lease duration. */
export type CommitRequest = ClaimMutationRequest<"commit">;
export type AbortRequest = ClaimMutationRequest<"abort">;
export type ReleaseRequest = ClaimMutationRequest<"release">;

/**
 * An operator's eviction of a claim's owner (docs/protocol.md#eviction; `admin` role): the
 * evict route's body, whose `note` (at most 256 bytes of UTF-8) watchers receive with the event.
 */
export type EvictRequest = { claimName: string } & RouteBody<typeof evictClaim>;

/** The request each batch op name stands for (the keys are exactly the op names of docs/protocol.md#batch). */
interface BatchRequests extends Record<BatchOpName, object> {
  acquire: AcquireRequest;
  renew: RenewRequest;
  prepare: TransferRequest;
  commit: CommitRequest;
  abort: AbortRequest;
  release: ReleaseRequest;
}

/**
 * One op of {@link ClaimsBackend.batch}: the single call's request plus which call it is.
 * @example
 * { op: "prepare", claimName: "ledger", fromGeneration: "g1", toGeneration: "g2", token: 7n, ttlMs: 30_000 }
 */
export type BatchOp = { [K in BatchOpName]: { op: K } & BatchRequests[K] }[BatchOpName];

/** What one batch op came to: what its single call would have resolved with, or rejected with. */
export type BatchOutcome = { ok: true; claim: ClaimRecord } | { ok: false; error: ShiftlockError };

export interface RegisterGenerationRequest {
  id: string;
  service: string;
  instanceId: string;
}

/**
 * A keepalive of a generation's lease (docs/protocol.md#sessions): the first starts a lease
 * (a new `leaseEpoch`), later ones extend it to at least now + `ttlMs`.
 * @example
 * { id: "g-42", ttlMs: 15_000 }
 */
export interface KeepaliveGenerationRequest {
  id: string;
  ttlMs: number;
  operationId?: string | undefined;
}

/** Options of {@link ClaimsBackend.openLeaseChannel}. */
export interface LeaseChannelOptions {
  /** The ttl that opening the channel and each ping extend the lease by (100 ms … 24 h). */
  ttlMs: number;
  /** Ping period: each ping is a keepalive (the handoff runtime uses ttl/3). */
  pingIntervalMs: number;
  /** Ends the channel (as `close()` does). */
  signal?: AbortSignal | undefined;
}

/**
 * What the lease channel yields (docs/protocol.md#sessions), each stamped with the local
 * time it arrived. `opened` and `pong` confirm a keepalive *sent* at `sentAtMs` (the
 * channel's opening, a ping); `leaseEpoch` of a pong is the epoch its connection opened in.
 */
export type LeaseChannelItem =
  | { type: "opened"; generation: GenerationRecord; sentAtMs: number; receivedAtMs: number }
  | { type: "pong"; leaseEpoch: bigint; sentAtMs: number; receivedAtMs: number }
  | { type: "lease"; leaseEpoch: bigint; leaseExpiresAtMs: number; receivedAtMs: number }
  | { type: "ended"; leaseEpoch: bigint; reason: LeaseEndReason; receivedAtMs: number };

/**
 * A live lease channel: reconnects by itself (client/claims/lease-channel.ts); iterate it.
 * `close()` (or the signal) ends it; it also ends when it never got established.
 */
export interface LeaseChannel extends AsyncIterable<LeaseChannelItem> {
  close(): void;
  /** True once the channel stopped for good (closed, aborted or failed). */
  readonly ended: boolean;
}

export interface UpdateGenerationRequest {
  id: string;
  state: GenerationState;
  reason?: string;
}

/** What a claim watch yields: first a snapshot (unless resuming), then events in version order. */
export type ClaimWatchItem =
  | { type: "snapshot"; claim: ClaimRecord | null; truncated: boolean }
  | {
      type: "event";
      reason: ClaimEventReason;
      claim: ClaimRecord;
      timeMs: number;
      /** `evicted` events: the operator's note, when one was given. */
      note?: string;
    };

export interface WatchClaimOptions extends CallOptions {
  /** Resume after this version: replay retained events with a greater version. */
  afterVersion?: bigint;
}

/** A live watch. Iterate it; `close()` (or the signal) ends the iteration. */
export interface ClaimWatch extends AsyncIterable<ClaimWatchItem> {
  close(): void;
}

export interface ClaimsBackend {
  /** The namespace this backend's claims live in (fence keys carry it: `{ns}/claims/{name}`). */
  readonly namespace: string;
  registerGeneration(req: RegisterGenerationRequest, opts?: CallOptions): Promise<GenerationRecord>;
  acquireClaim(req: AcquireRequest, opts?: CallOptions): Promise<ClaimRecord>;
  renewClaim(req: RenewRequest, opts?: CallOptions): Promise<ClaimRecord>;
  prepareTransfer(req: TransferRequest, opts?: CallOptions): Promise<ClaimRecord>;
  commitTransfer(req: CommitRequest, opts?: CallOptions): Promise<ClaimRecord>;
  abortTransfer(req: AbortRequest, opts?: CallOptions): Promise<ClaimRecord>;
  /** Resolves with the released record. */
  releaseClaim(req: ReleaseRequest, opts?: CallOptions): Promise<ClaimRecord>;
  /**
   * Evict the claim's owner (an operator's act; the `admin` role over HTTP): resolves with
   * the record, now unowned with reason `evicted` (or unchanged when nobody held it). Until
   * the next acquire, the evicted owner's calls presenting its token reject with `evicted`.
   * Rejects with `claim_not_found` for a claim never acquired.
   * @example
   * await claims.evictClaim({ claimName: "billing-cron", note: "stuck since 04:00, INC-123" });
   */
  evictClaim(req: EvictRequest, opts?: CallOptions): Promise<ClaimRecord>;
  /** The calling token's configured name and role (the in-memory backend: `memory`, `admin`). */
  whoami(opts?: CallOptions): Promise<Whoami>;
  /**
   * Run 1–128 mutations of distinct claims at once (independent, not atomic); one outcome
   * per op, in order. Operation ids keep their meaning (shared with the single calls).
   */
  batch(ops: readonly BatchOp[], opts?: CallOptions): Promise<BatchOutcome[]>;
  watchClaim(claimName: string, opts?: WatchClaimOptions): ClaimWatch;
  updateGeneration(req: UpdateGenerationRequest, opts?: CallOptions): Promise<GenerationRecord>;
  getClaim(claimName: string, opts?: CallOptions): Promise<ClaimRecord>;
  getGeneration(generationId: string, opts?: CallOptions): Promise<GenerationRecord>;
  /**
   * Keep the generation's lease (docs/protocol.md#sessions): resolves with the record, whose
   * `leaseExpiresAtMs` and `leaseEpoch` say what the server promises. Claims acquired with
   * `bound: true` stay held while the epoch they were bound to is live.
   * @example
   * const g = await claims.keepaliveGeneration({ id: "g-42", ttlMs: 15_000 });
   * await claims.acquireClaim({ claimName: "billing-cron", generationId: "g-42", bound: true });
   */
  keepaliveGeneration(req: KeepaliveGenerationRequest, opts?: CallOptions): Promise<GenerationRecord>;
  /** End the generation's lease now: every claim bound to it expires (reason `expired`). */
  endGenerationLease(generationId: string, opts?: CallOptions): Promise<GenerationRecord>;
  /**
   * Keep the generation's lease over the lease channel (docs/protocol.md#sessions): opening
   * it and each ping are keepalives that cost no request. Undefined when this backend cannot
   * open one (no WebSocket constructor); optional, so a backend without it still keeps
   * leases with {@link keepaliveGeneration}.
   * @example
   * const channel = claims.openLeaseChannel?.("g-42", { ttlMs: 15_000, pingIntervalMs: 5_000 });
   * for await (const item of channel ?? []) if (item.type === "ended") break;
   */
  openLeaseChannel?(generationId: string, opts: LeaseChannelOptions): LeaseChannel | undefined;
  /**
   * Every claim of the namespace in UTF-8 byte order of its name, following cursors page by
   * page (docs/protocol.md#listing). Over HTTP the records come from the namespace index (up to 2 s behind).
   */
  listClaims(filter?: ListClaimsFilter, opts?: PageOptions): AsyncIterable<ClaimRecord>;
  /** Every generation of the namespace, by id (see {@link ClaimsBackend.listClaims}). */
  listGenerations(filter?: ListGenerationsFilter, opts?: PageOptions): AsyncIterable<GenerationRecord>;
  /** Stop watches and refuse further calls. */
  close(): Promise<void>;
}
