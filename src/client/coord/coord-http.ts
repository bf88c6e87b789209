/**
 * `HttpCoordinator`: the seed's `Coordinator` over the shiftlock HTTP/WebSocket API (SPEC §4).
 *
 * Guarantees:
 * - Each call is the route SPEC names under `/v1/ns/{namespace}/volumes/…`, every name
 *   percent-encoded; counters are `bigint`; refusals reject with the server's
 *   `ShiftlockError` (same code). Scope and option checks run locally first with the
 *   server's own rules (scope-empty, bad names, ttl range, keyed snapshot/watch).
 * - `tryAcquireWriteLease`: `lease_held` becomes `{acquired: false}`.
 * - `waitAcquireWriteLease`: the server queues the request first-come first-served. With
 *   `waitMs` it is one request (`lease_held` when it passes). Without it the client waits
 *   until `signal` aborts, re-queueing every `waitChunkMs` (default 60 s) and after network
 *   failures. Each queued request carries a fresh `waiterId`; aborting (or a failed request)
 *   sends `DELETE {scope}/leases/{waiterId}`, which takes the caller out of the queue — or
 *   gives back a grant that crossed the abort — before the promise rejects.
 * - Leases keep themselves alive and detect loss (see `write-lease.ts`).
 * - `watch` resolves once the server registered it; it reconnects and resumes by itself
 *   (see `coord-watch-socket.ts`).
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
import { formatCounter } from "../../protocol/counter.ts";
import { ShiftlockError, hasCode } from "../../protocol/errors.ts";
import type { WebSocketConstructor } from "../transport/claim-watch-socket.ts";
import {
  decodeAcquireAnswer,
  decodeCapability,
  decodeKeepaliveAnswer,
  decodeSnapshot,
  publishBody,
} from "./coord-decode.ts";
import { checkAcquireOptions, checkScope, keyedUnsupported, scopeSegments, type CheckedScope } from "./coord-scope.ts";
import type {
  AcquireOptions,
  CallOptions,
  Capability,
  CoordWatch,
  Coordinator,
  Scope,
  Snapshot,
  TryAcquireResult,
  WaitAcquireOptions,
  WriteLease,
} from "./coord-types.ts";
import { SocketCoordWatch } from "../transport/coord-watch-socket.ts";
import { HttpTransport, isNetworkError, type HttpTransportOptions } from "../transport/http-transport.ts";
import {
  HeldWriteLease,
  defaultSafetyMarginMs,
  type LeaseDriver,
  type LeaseGrant,
  type LeaseTimingOptions,
} from "./write-lease.ts";

export interface HttpCoordinatorOptions extends HttpTransportOptions, LeaseTimingOptions {
  /**
   * WebSocket constructor for watches. Defaults to `globalThis.WebSocket` (browsers,
   * Workers, Node ≥ 22). On Node 20 pass the `ws` package's default export.
   */
  WebSocket?: WebSocketConstructor;
  /**
   * How the bearer token travels in the WebSocket handshake: an `Authorization` header
   * (what `ws` can send) or the subprotocol `shiftlock.bearer.<token>` (what browsers can
   * send). Default: `"header"` when `WebSocket` is injected, `"subprotocol"` otherwise.
   */
  webSocketAuth?: "header" | "subprotocol";
  /** Timers for keepalives, watch pings and backoff. Default: the system clock. */
  clock?: Clock;
  /** Longest single server-side wait of an unbounded `waitAcquireWriteLease`, ms (default 60 000). */
  waitChunkMs?: number;
  /** Keep-alive ping period of watches, ms (default 30 000). */
  watchPingIntervalMs?: number;
  /** Reconnect backoff bounds of watches, ms (defaults 100 and 5 000). */
  watchReconnectMinMs?: number;
  watchReconnectMaxMs?: number;
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

  async capability(scope: Scope, opts: CallOptions = {}): Promise<Capability> {
    opts.signal?.throwIfAborted();
    const checked = checkScope(scope);
    const res = await this.transport.request("GET", [...scopeSegments(checked), "capability"], undefined, opts.signal);
    return decodeCapability(res.body);
  }

  async snapshot(scope: Scope, opts: CallOptions = {}): Promise<Snapshot> {
    opts.signal?.throwIfAborted();
    const checked = checkScope(scope);
    if (checked.keyed) throw keyedUnsupported("snapshot");
    const res = await this.transport.request("GET", [...scopeSegments(checked), "snapshot"], undefined, opts.signal);
    return decodeSnapshot(res.body);
  }

  async watch(scope: Scope, afterGeneration: bigint, opts: CallOptions = {}): Promise<CoordWatch> {
    opts.signal?.throwIfAborted();
    const checked = checkScope(scope);
    if (checked.keyed) throw keyedUnsupported("watch");
    const Ctor = this.options.WebSocket ?? (globalThis as { WebSocket?: WebSocketConstructor }).WebSocket;
    if (Ctor === undefined) {
      throw new ShiftlockError(
        "invalid_request",
        "no WebSocket available: pass options.WebSocket (e.g. the ws package)",
        {
          field: "WebSocket",
        },
      );
    }
    const auth = this.options.webSocketAuth ?? (this.options.WebSocket === undefined ? "subprotocol" : "header");
    const token = this.transport.bearerToken();
    const segments = scopeSegments(checked);
    const watch = new SocketCoordWatch({
      url: (after) =>
        this.transport.url([...segments, "watch"], { afterGeneration: formatCounter(after) }).replace(/^http/, "ws"),
      connect: (url) =>
        auth === "header"
          ? new Ctor(url, [], { headers: { Authorization: `Bearer ${token}` } })
          : new Ctor(url, [`shiftlock.bearer.${token}`]),
      // Tells a permanent refusal (auth, names) from a transient failure.
      probe: async (signal) => {
        await this.transport.request("GET", [...segments, "capability"], undefined, signal);
      },
      clock: this.clock,
      afterGeneration,
      signal: opts.signal,
      pingIntervalMs: this.options.watchPingIntervalMs ?? 30_000,
      reconnectMinMs: this.options.watchReconnectMinMs ?? 100,
      reconnectMaxMs: this.options.watchReconnectMaxMs ?? 5_000,
    });
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
      if (hasCode(err, "lease_held")) return { acquired: false, lease: undefined };
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
    for (let failures = 0; ;) {
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
          failures = 0;
          continue; // the chunk passed: queue again
        }
        const transient = isNetworkError(err) || (err instanceof ShiftlockError && err.status >= 500);
        if (!transient) throw err;
        // The failed request may still be queued on the server: withdraw it before re-queueing.
        await this.cancelWait(checked, waiterId);
        if (outOfTime)
          throw new ShiftlockError("lease_held", "write lease is held (waitMs passed)", {}, { cause: err });
        failures++;
        await this.clock.sleep(Math.min(5_000, 100 * 2 ** Math.min(failures, 6)), signal);
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
    const body: Record<string, unknown> = { participantId: scope.participantId, ttlMs };
    if (waitMs !== undefined && waitMs > 0) {
      body["waitMs"] = waitMs;
      if (waiterId !== undefined) body["waiterId"] = waiterId;
    }
    const res = await this.transport.request("POST", [...scopeSegments(scope), "leases"], body, signal);
    return decodeAcquireAnswer(res.body);
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
      await this.transport.request("DELETE", [...scopeSegments(scope), "leases", waiterId], undefined, bound.signal);
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
    const base = [...scopeSegments(scope), "leases", grant.leaseId];
    const driver: LeaseDriver = {
      keepalive: async (keepaliveTtlMs, signal) =>
        decodeKeepaliveAnswer(
          (await this.transport.request("POST", [...base, "keepalive"], { ttlMs: keepaliveTtlMs }, signal)).body,
        ),
      refresh: async (signal) =>
        decodeSnapshot((await this.transport.request("POST", [...base, "refresh"], {}, signal)).body),
      publish: async (req, signal) =>
        decodeSnapshot((await this.transport.request("POST", [...base, "publish"], publishBody(req), signal)).body),
      release: async (signal) => {
        await this.transport.request("DELETE", base, undefined, signal);
      },
    };
    return new HeldWriteLease({
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
