/**
 * `HttpCoordinator`: the Go interface's `Coordinator` over the shiftlock HTTP/WebSocket API (docs/protocol.md#coord).
 *
 * Guarantees:
 * - Each call is one call of the route the protocol declares for the scope's address
 *   (src/protocol/scope-routes.ts), every name percent-encoded; counters are `bigint`;
 *   refusals reject with the server's `ShiftlockError` (same code). Scope and option checks
 *   run locally first with the server's own rules (scope-empty, bad names, ttl range, keyed
 *   snapshot/watch).
 * - `tryAcquireWriteLease`: `lease_held` becomes `{acquired: false, holder}`.
 * - `waitAcquireWriteLease`: the server queues the request first-come first-served. With
 *   `waitMs` it is one request (`lease_held` when it passes). Without it the client waits
 *   until `signal` aborts, re-queueing every `waitChunkMs` (default 60 s) and after network
 *   failures. Each queued request carries a fresh `waiterId`; aborting (or a failed request)
 *   sends `DELETE {scope}/leases/{waiterId}`, which takes the caller out of the queue — or
 *   gives back a grant that crossed the abort — before the promise rejects.
 * - Leases keep themselves alive and detect loss (see `write-lease.ts`).
 * - `watch` resolves once the server registered it; it reconnects and resumes by itself,
 *   acknowledges what it processed, and stands in for hints it may have missed while
 *   reconnecting (see `coord-watch.ts`).
 *
 * Does not: retry publish (a publish whose answer was lost may have been applied — use
 * `expectedGeneration` to make a retry safe).
 *
 * @example
 * import WebSocket from "ws"; // Node 20 only; browsers/Workers/Node 22 have a global one
 * const coord = new HttpCoordinator({ baseUrl, token, namespace: "prod", WebSocket });
 * await using lease = await coord.waitAcquireWriteLease(scope, { signal });
 * await lease.publish({ expectedGeneration: snap.generation, root: newRoot });
 */
import { systemClock, type Clock } from "../../core/clock.ts";
import { ShiftlockError, hasCode } from "../../protocol/errors.ts";
import { isRetryable, requeueBackoff, retryDelayMs } from "../transport/retry-policy.ts";
import { HttpTransport, type HttpTransportOptions } from "../transport/http-transport.ts";
import { WatchSocket } from "../transport/watch-socket.ts";
import { socketOpener, type WatchConnectionOptions } from "../transport/websocket.ts";
import {
  checkAcquireOptions,
  checkScope,
  keyedUnsupported,
  leaseHolderOf,
  scopeParams,
  scopeRoutes,
  type CheckedScope,
} from "./coord-scope.ts";
import type {
  AcquireOptions,
  CallOptions,
  Capability,
  CoordWatch,
  Coordinator,
  EvictOptions,
  Scope,
  Snapshot,
  TryAcquireResult,
  WaitAcquireOptions,
  WriteLease,
} from "./coord-types.ts";
import { publishBody } from "./coord-values.ts";
import { listScopes } from "../../protocol/listing-routes.ts";
import type { ScopeSummary } from "../../protocol/listing.ts";
import { followCursors, type PageOptions } from "../listing.ts";
import { CoordResume, HttpCoordWatch } from "./coord-watch.ts";
import { HeldWriteLease, type LeaseDriver, type LeaseGrant, type LeaseTimingOptions } from "./write-lease.ts";
import { defaultSafetyMarginMs } from "../lease-timing.ts";

export interface HttpCoordinatorOptions extends HttpTransportOptions, WatchConnectionOptions, LeaseTimingOptions {
  /** Longest single server-side wait of an unbounded `waitAcquireWriteLease`, ms (default 60 000). */
  waitChunkMs?: number;
}

const DEFAULT_WAIT_CHUNK_MS = 60_000;

export class HttpCoordinator implements Coordinator {
  private readonly transport: HttpTransport;
  private readonly clock: Clock;
  private readonly options: HttpCoordinatorOptions;
  private readonly timing: LeaseTimingOptions;

  constructor(options: HttpCoordinatorOptions) {
    this.options = options;
    this.transport = new HttpTransport(options);
    this.clock = options.clock ?? systemClock;
    this.timing = { safetyMarginMs: options.safetyMarginMs, releaseTimeoutMs: options.releaseTimeoutMs };
  }
  listScopes(filter: { volumeId?: string | undefined } = {}, opts: PageOptions = {}): AsyncIterable<ScopeSummary> {
    return followCursors(async (cursor) => {
      const query = { volumeId: filter.volumeId, limit: opts.limit, cursor };
      const page = await this.transport.call(listScopes, { query }, opts.signal);
      return { items: page.scopes, cursor: page.cursor };
    });
  }

  async evict(scope: Scope, opts: EvictOptions = {}): Promise<Snapshot> {
    opts.signal?.throwIfAborted();
    const checked = checkScope(scope);
    const input = { params: scopeParams(checked), body: { note: opts.note } };
    return this.transport.call(scopeRoutes(checked).evict, input, opts.signal);
  }

  async capability(scope: Scope, opts: CallOptions = {}): Promise<Capability> {
    opts.signal?.throwIfAborted();
    const checked = checkScope(scope);
    return this.transport.call(scopeRoutes(checked).capability, { params: scopeParams(checked) }, opts.signal);
  }

  async snapshot(scope: Scope, opts: CallOptions = {}): Promise<Snapshot> {
    opts.signal?.throwIfAborted();
    const checked = checkScope(scope);
    if (checked.keyed) throw keyedUnsupported("snapshot");
    return this.transport.call(scopeRoutes(checked).snapshot, { params: scopeParams(checked) }, opts.signal);
  }

  async watch(scope: Scope, afterGeneration: bigint, opts: CallOptions = {}): Promise<CoordWatch> {
    opts.signal?.throwIfAborted();
    const checked = checkScope(scope);
    if (checked.keyed) throw keyedUnsupported("watch");
    const routes = scopeRoutes(checked);
    const params = scopeParams(checked);
    const url = (after: bigint): string =>
      this.transport.url(routes.watch, params, { afterGeneration: after }).replace(/^http/, "ws");
    url(afterGeneration); // a resume point out of range is refused now, not by a failing handshake
    const connect = socketOpener(this.options, this.transport);
    const resume = new CoordResume({
      url,
      // Tells a permanent refusal (auth, names) from a transient failure.
      probe: async (signal) => {
        await this.transport.call(routes.capability, { params }, signal);
      },
      afterGeneration,
      volumeId: checked.volumeId,
      objectStoreId: checked.objectStoreId,
    });
    const socket = new WatchSocket(resume, {
      ...routes.watch.websocket,
      connect,
      clock: this.clock,
      signal: opts.signal,
      pingIntervalMs: this.options.watchPingIntervalMs ?? 30_000,
      reconnectMinMs: this.options.watchReconnectMinMs ?? 100,
      reconnectMaxMs: this.options.watchReconnectMaxMs ?? 5_000,
      initialAttempts: 3,
    });
    const watch = new HttpCoordWatch(resume, socket);
    await watch.ready;
    return watch;
  }

  async tryAcquireWriteLease(scope: Scope, opts: AcquireOptions = {}): Promise<TryAcquireResult> {
    opts.signal?.throwIfAborted();
    const checked = checkScope(scope, "required");
    const ttlMs = checkAcquireOptions(checked, opts.ttlMs, undefined);
    const sentAtMs = this.clock.nowMs();
    try {
      const grant = await this.postLease(checked, ttlMs, undefined, opts.signal);
      return { acquired: true, lease: this.lease(checked, grant, ttlMs, sentAtMs, false, opts) };
    } catch (err) {
      if (hasCode(err, "lease_held")) return { acquired: false, lease: undefined, holder: leaseHolderOf(err.details) };
      throw err;
    }
  }

  async waitAcquireWriteLease(scope: Scope, opts: WaitAcquireOptions = {}): Promise<WriteLease> {
    const signal = opts.signal;
    signal?.throwIfAborted();
    const checked = checkScope(scope, "required");
    const ttlMs = checkAcquireOptions(checked, opts.ttlMs, opts.waitMs);
    const margin = this.timing.safetyMarginMs ?? defaultSafetyMarginMs(ttlMs);
    const giveUpAtMs = opts.waitMs === undefined ? undefined : this.clock.nowMs() + opts.waitMs;
    const chunkMs = this.options.waitChunkMs ?? DEFAULT_WAIT_CHUNK_MS;
    const backoff = requeueBackoff();
    for (;;) {
      const now = this.clock.nowMs();
      const waitMs = giveUpAtMs === undefined ? chunkMs : Math.max(0, giveUpAtMs - now);
      // Names this wait so that we can cancel it ourselves: not every proxy tells the
      // server that a client went away (wrangler dev does not).
      const waiterId = crypto.randomUUID();
      try {
        const grant = await this.postLease(checked, ttlMs, waitMs, signal, waiterId);
        const receivedAtMs = this.clock.nowMs();
        // The server started the ttl somewhere between send and receipt. A quick answer
        // keeps the safe bound (send time); after a real wait, count from receipt and
        // confirm with an immediate keepalive.
        const quick = receivedAtMs - now <= margin;
        return this.lease(checked, grant, ttlMs, quick ? now : receivedAtMs, !quick, opts);
      } catch (err) {
        if (signal?.aborted === true) {
          // Leave the queue (or give back a grant that crossed the abort) before reporting.
          await this.cancelWait(checked, waiterId);
          throw signal.reason;
        }
        const outOfTime = giveUpAtMs !== undefined && this.clock.nowMs() >= giveUpAtMs;
        if (hasCode(err, "lease_held")) {
          if (giveUpAtMs !== undefined) throw err;
          backoff.reset();
          continue; // the chunk passed: queue again
        }
        // Never repeated blindly: the failed wait is withdrawn by its own waiterId (which
        // gives back a grant that crossed), then a fresh wait queues (transport/retry-policy.ts).
        if (!isRetryable(err)) throw err;
        // The failed request may still be queued on the server: withdraw it before re-queueing.
        await this.cancelWait(checked, waiterId);
        if (outOfTime)
          throw new ShiftlockError("lease_held", "write lease is held (waitMs passed)", {}, { cause: err });
        await this.clock.sleep(retryDelayMs(err, backoff), signal);
      }
    }
  }

  // ------------------------------------------------------------------------------------

  private async postLease(
    scope: CheckedScope,
    ttlMs: number,
    waitMs: number | undefined,
    signal: AbortSignal | undefined,
    waiterId?: string,
  ): Promise<LeaseGrant> {
    const waiting = waitMs !== undefined && waitMs > 0;
    const body = { participantId: scope.participantId, ttlMs, ...(waiting ? { waitMs, waiterId } : {}) };
    const input = { params: scopeParams(scope), body };
    return (await this.transport.call(scopeRoutes(scope).acquire, input, signal)).lease;
  }

  /**
   * `DELETE {scope}/leases/{waiterId}`: cancel a named wait, or release the lease it was
   * granted. Best effort, bounded by the release timeout, whatever the caller's signal.
   */
  private async cancelWait(scope: CheckedScope, waiterId: string): Promise<void> {
    const bound = new AbortController();
    const timer = this.clock.sleep(this.timing.releaseTimeoutMs ?? 5_000, bound.signal).then(
      () => bound.abort(),
      () => undefined,
    );
    try {
      const params = { ...scopeParams(scope), leaseId: waiterId };
      await this.transport.call(scopeRoutes(scope).release, { params }, bound.signal);
    } catch {
      // The wait still ends on its own: at waitMs, or its grant expires after the ttl.
    } finally {
      bound.abort();
      await timer;
    }
  }

  private lease(
    scope: CheckedScope,
    grant: LeaseGrant,
    ttlMs: number,
    requestedAtMs: number,
    keepaliveNow: boolean,
    opts: AcquireOptions,
  ): WriteLease {
    const routes = scopeRoutes(scope);
    const params = { ...scopeParams(scope), leaseId: grant.leaseId };
    const driver: LeaseDriver = {
      keepalive: (keepaliveTtlMs, signal) =>
        this.transport.call(routes.keepalive, { params, body: { ttlMs: keepaliveTtlMs } }, signal),
      refresh: (signal) => this.transport.call(routes.refresh, { params, body: {} }, signal),
      publish: (req, signal) => this.transport.call(routes.publish, { params, body: publishBody(req) }, signal),
      release: (signal) => this.transport.call(routes.release, { params }, signal),
    };
    return new HeldWriteLease({
      namespace: this.options.namespace,
      scope,
      grant,
      ttlMs,
      requestedAtMs,
      keepaliveNow,
      driver,
      clock: this.clock,
      onWantLock: opts.onWantLock,
      ...this.timing,
    });
  }
}
