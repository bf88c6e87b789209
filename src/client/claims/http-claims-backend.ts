/**
 * `HttpClaimsBackend`: the {@link ClaimsBackend} over the shiftlock HTTP API (docs/protocol.md#claims).
 *
 * Guarantees:
 * - Every method is one call of the route the protocol declares (src/protocol/claim-routes.ts,
 *   generation-routes.ts): fencing tokens and versions are `bigint` in code and decimal
 *   strings on the wire; refusals reject with the server's {@link ShiftlockError} (same
 *   `code`); see `http-transport.ts` for network failures and cancellation.
 * - `batch(ops)` is one request to the batch route (docs/protocol.md#batch): ops are checked and encoded
 *   as their single routes would be (claim-batch.ts), an op refused locally is that op's
 *   outcome and is not sent, and each result is decoded with its op's own route.
 * - `watchClaim` is a resumable WebSocket watch (see `claim-watch.ts`); `openLeaseChannel`
 *   keeps a generation's lease over the lease channel (`lease-channel.ts`) and is undefined
 *   without a WebSocket constructor.
 * - After `close()` every call rejects with `invalid_request` ("client is closed") and
 *   every open watch ends.
 *
 * Does not: retry mutations by itself (pass an `operationId` and retry to be safe), or
 * renew leases (the handoff runtime does).
 *
 * @example
 * const claims = new HttpClaimsBackend({ baseUrl: "https://locks.example.com", token, namespace: "prod" });
 * const rec = await claims.acquireClaim({ claimName: "billing-cron", generationId: "g-42", ttlMs: 15_000 });
 * console.log(rec.fencingToken); // 7n
 */
import { systemClock, type Clock } from "../../core/clock.ts";
import { CLAIM_MUTATIONS, claimBatch, evictClaim, getClaim, watchClaim } from "../../protocol/claim-routes.ts";
import type { Whoami } from "../../protocol/operators.ts";
import { whoami } from "../../protocol/routes.ts";
import { ShiftlockError, hasCode } from "../../protocol/errors.ts";
import {
  endGenerationLease,
  generationLeaseChannel,
  getGeneration,
  keepaliveGeneration,
  registerGeneration,
  updateGeneration,
} from "../../protocol/generation-routes.ts";
import type { ClaimWatchMessage } from "../../protocol/claims.ts";
import type { RouteBody } from "../../protocol/route.ts";
import { listClaims, listGenerations } from "../../protocol/listing-routes.ts";
import { followCursors, type PageOptions } from "../listing.ts";
import { HttpTransport, type HttpTransportOptions } from "../transport/http-transport.ts";
import { checkPathParams } from "../transport/route-codec.ts";
import { WatchSocket } from "../transport/watch-socket.ts";
import {
  socketOpener,
  type WatchConnectionOptions,
  type WebSocketConstructor,
  type WebSocketLike,
} from "../transport/websocket.ts";
import { checkBatch, encodeOp, outcomeOf, settleOp, type EncodedOp } from "./claim-batch.ts";
import { ClaimResume, type ClaimWatchClientMessage } from "./claim-watch.ts";
import { openLeaseChannel } from "./lease-channel.ts";
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

export type { WebSocketConstructor, WebSocketLike };

export interface HttpClaimsBackendOptions extends HttpTransportOptions, WatchConnectionOptions {}

type Mutation = (typeof CLAIM_MUTATIONS)[keyof typeof CLAIM_MUTATIONS];

export class HttpClaimsBackend implements ClaimsBackend {
  readonly namespace: string;
  private readonly transport: HttpTransport;
  private readonly options: HttpClaimsBackendOptions;
  private readonly clock: Clock;
  private readonly watches = new Set<ClaimWatch>();
  private readonly leaseChannels = new Set<LeaseChannel>();
  private closed = false;

  constructor(options: HttpClaimsBackendOptions) {
    checkPathParams(watchClaim, { ns: options.namespace });
    this.options = options;
    this.namespace = options.namespace;
    this.transport = new HttpTransport(options);
    this.clock = options.clock ?? systemClock;
  }

  private async mutate<R extends Mutation>(
    route: R,
    claimName: string,
    body: RouteBody<R>,
    opts: CallOptions | undefined,
  ): Promise<ClaimRecord> {
    this.ensureOpen();
    // RouteBody<R> is one member of RouteBody<Mutation>: widening only, checked per call site.
    const input = { params: { claim: claimName }, body: body as RouteBody<Mutation> };
    return (await this.transport.call<Mutation>(route, input, opts?.signal)).claim;
  }

  acquireClaim(req: AcquireRequest, opts?: CallOptions): Promise<ClaimRecord> {
    const { claimName, ...body } = req;
    return this.mutate(CLAIM_MUTATIONS.acquire, claimName, body, opts);
  }

  renewClaim(req: RenewRequest, opts?: CallOptions): Promise<ClaimRecord> {
    const { claimName, ...body } = req;
    return this.mutate(CLAIM_MUTATIONS.renew, claimName, body, opts);
  }

  prepareTransfer(req: TransferRequest, opts?: CallOptions): Promise<ClaimRecord> {
    const { claimName, ...body } = req;
    return this.mutate(CLAIM_MUTATIONS.prepare, claimName, body, opts);
  }

  commitTransfer(req: CommitRequest, opts?: CallOptions): Promise<ClaimRecord> {
    const { claimName, ...body } = req;
    return this.mutate(CLAIM_MUTATIONS.commit, claimName, body, opts);
  }

  abortTransfer(req: AbortRequest, opts?: CallOptions): Promise<ClaimRecord> {
    const { claimName, ...body } = req;
    return this.mutate(CLAIM_MUTATIONS.abort, claimName, body, opts);
  }

  releaseClaim(req: ReleaseRequest, opts?: CallOptions): Promise<ClaimRecord> {
    const { claimName, ...body } = req;
    return this.mutate(CLAIM_MUTATIONS.release, claimName, body, opts);
  }

  async evictClaim(req: EvictRequest, opts?: CallOptions): Promise<ClaimRecord> {
    this.ensureOpen();
    const input = { params: { claim: req.claimName }, body: { note: req.note } };
    return (await this.transport.call(evictClaim, input, opts?.signal)).claim;
  }

  async whoami(opts?: CallOptions): Promise<Whoami> {
    this.ensureOpen();
    return this.transport.call(whoami, {}, opts?.signal);
  }

  async batch(ops: readonly BatchOp[], opts?: CallOptions): Promise<BatchOutcome[]> {
    this.ensureOpen();
    checkBatch(ops);
    const outcomes: (BatchOutcome | undefined)[] = [];
    const sent: { index: number; op: EncodedOp }[] = [];
    ops.forEach((op, index) => {
      const encoded = settleOp(() => encodeOp(op));
      if ("ok" in encoded) outcomes[index] = encoded;
      else sent.push({ index, op: encoded });
    });
    if (sent.length > 0) {
      const body = { ops: sent.map(({ op }) => ({ op: op.op, claim: op.claimName, ...op.body })) };
      const { results } = await this.transport.call(claimBatch, { body }, opts?.signal);
      if (results.length !== sent.length) {
        throw new ShiftlockError(
          "internal",
          `malformed response to claimBatch: ${results.length} results for ${sent.length} ops`,
        );
      }
      sent.forEach(({ index, op }, i) => (outcomes[index] = outcomeOf(op.route, results[i]!)));
    }
    return outcomes as BatchOutcome[];
  }

  async getClaim(claimName: string, opts?: CallOptions): Promise<ClaimRecord> {
    this.ensureOpen();
    return (await this.transport.call(getClaim, { params: { claim: claimName } }, opts?.signal)).claim;
  }

  async registerGeneration(req: RegisterGenerationRequest, opts?: CallOptions): Promise<GenerationRecord> {
    this.ensureOpen();
    const body = { id: req.id, service: req.service, instanceId: req.instanceId };
    return (await this.transport.call(registerGeneration, { body }, opts?.signal)).generation;
  }

  async updateGeneration(req: UpdateGenerationRequest, opts?: CallOptions): Promise<GenerationRecord> {
    this.ensureOpen();
    const input = { params: { id: req.id }, body: { state: req.state, reason: req.reason } };
    return (await this.transport.call(updateGeneration, input, opts?.signal)).generation;
  }

  listClaims(filter: ListClaimsFilter = {}, opts: PageOptions = {}): AsyncIterable<ClaimRecord> {
    return followCursors(async (cursor) => {
      const query = { prefix: filter.prefix, phase: filter.phase, owner: filter.owner, limit: opts.limit, cursor };
      const page = await this.transport.call(listClaims, { query }, opts.signal);
      return { items: page.claims, cursor: page.cursor };
    });
  }

  listGenerations(filter: ListGenerationsFilter = {}, opts: PageOptions = {}): AsyncIterable<GenerationRecord> {
    return followCursors(async (cursor) => {
      const query = { service: filter.service, state: filter.state, limit: opts.limit, cursor };
      const page = await this.transport.call(listGenerations, { query }, opts.signal);
      return { items: page.generations, cursor: page.cursor };
    });
  }

  async getGeneration(generationId: string, opts?: CallOptions): Promise<GenerationRecord> {
    this.ensureOpen();
    return (await this.transport.call(getGeneration, { params: { id: generationId } }, opts?.signal)).generation;
  }

  async keepaliveGeneration(req: KeepaliveGenerationRequest, opts?: CallOptions): Promise<GenerationRecord> {
    this.ensureOpen();
    const input = { params: { id: req.id }, body: { ttlMs: req.ttlMs, operationId: req.operationId } };
    return (await this.transport.call(keepaliveGeneration, input, opts?.signal)).generation;
  }

  async endGenerationLease(generationId: string, opts?: CallOptions): Promise<GenerationRecord> {
    this.ensureOpen();
    const input = { params: { id: generationId }, body: {} };
    return (await this.transport.call(endGenerationLease, input, opts?.signal)).generation;
  }

  /** See {@link ClaimsBackend.watchClaim}; `established` resolves once the server first answered. */
  watchClaim(claimName: string, opts?: WatchClaimOptions): ClaimWatch & { readonly established: Promise<void> } {
    this.ensureOpen();
    const params = { claim: claimName };
    // Checked up front: a refused handshake would otherwise look like a transient failure.
    const firstUrl = (afterVersion: bigint | undefined): string =>
      this.transport.url(watchClaim, params, { afterVersion }).replace(/^http/, "ws");
    firstUrl(opts?.afterVersion);
    const connect = socketOpener(this.options, this.transport);
    const resume = new ClaimResume({
      url: firstUrl,
      probe: async (signal) => {
        try {
          await this.transport.call(getClaim, { params }, signal);
        } catch (err) {
          // A watch of a claim nobody acquired yet is legitimate.
          if (!hasCode(err, "claim_not_found")) throw err;
        }
      },
      afterVersion: opts?.afterVersion,
    });
    let watch: WatchSocket<ClaimWatchMessage, ClaimWatchClientMessage, ClaimWatchItem> | undefined = undefined;
    watch = new WatchSocket(resume, {
      ...watchClaim.websocket,
      connect,
      clock: this.clock,
      signal: opts?.signal,
      pingIntervalMs: this.options.watchPingIntervalMs ?? 30_000,
      reconnectMinMs: this.options.watchReconnectMinMs ?? 100,
      reconnectMaxMs: this.options.watchReconnectMaxMs ?? 5_000,
      onEnd: () => {
        if (watch !== undefined) this.watches.delete(watch);
      },
    });
    if (!watch.ended) this.watches.add(watch);
    return watch;
  }

  /** See {@link ClaimsBackend.openLeaseChannel}; undefined when no WebSocket constructor is available. */
  openLeaseChannel(generationId: string, opts: LeaseChannelOptions): LeaseChannel | undefined {
    this.ensureOpen();
    let connect;
    try {
      connect = socketOpener(this.options, this.transport);
    } catch {
      return undefined; // no WebSocket here: the caller keeps the lease over HTTP
    }
    const params = { id: generationId };
    const url = this.transport.url(generationLeaseChannel, params, { ttlMs: opts.ttlMs }).replace(/^http/, "ws");
    let channel: LeaseChannel | undefined = undefined;
    channel = openLeaseChannel({
      url,
      connect,
      probe: async (signal) => {
        await this.transport.call(getGeneration, { params }, signal);
      },
      clock: this.clock,
      signal: opts.signal,
      pingIntervalMs: opts.pingIntervalMs,
      reconnectMinMs: this.options.watchReconnectMinMs ?? 100,
      reconnectMaxMs: this.options.watchReconnectMaxMs ?? 5_000,
      onEnd: () => {
        if (channel !== undefined) this.leaseChannels.delete(channel);
      },
    });
    if (!channel.ended) this.leaseChannels.add(channel);
    return channel;
  }

  close(): Promise<void> {
    this.closed = true;
    for (const c of [...this.leaseChannels]) c.close();
    this.leaseChannels.clear();
    for (const w of [...this.watches]) w.close();
    this.watches.clear();
    return Promise.resolve();
  }

  private ensureOpen(): void {
    if (this.closed) throw new ShiftlockError("invalid_request", "client is closed");
  }
}
