/**
 * `HttpClaimsBackend`: the {@link ClaimsBackend} over the shiftlock HTTP API (SPEC §3).
 *
 * Guarantees:
 * - Every method is one HTTP request to the route SPEC names; fencing tokens and versions
 *   are `bigint` in code and decimal strings on the wire; refusals reject with the
 *   server's {@link ShiftlockError} (same `code`), see `http-transport.ts` for network
 *   failures and cancellation.
 * - `watchClaim` is a resumable WebSocket watch (see `claim-watch-socket.ts`).
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
import { formatCounter } from "../../protocol/counter.ts";
import { ShiftlockError } from "../../protocol/errors.ts";
import type {
  AbortRequest,
  AcquireRequest,
  CallOptions,
  ClaimRecord,
  ClaimsBackend,
  ClaimWatch,
  CommitRequest,
  GenerationRecord,
  RegisterGenerationRequest,
  ReleaseRequest,
  RenewRequest,
  TransferRequest,
  UpdateGenerationRequest,
  WatchClaimOptions,
} from "./claims-backend.ts";
import { SocketClaimWatch, type WebSocketConstructor, type WebSocketLike } from "../transport/claim-watch-socket.ts";
import { decodeClaimAnswer, decodeGenerationAnswer } from "./decode.ts";
import { HttpTransport, type HttpTransportOptions } from "../transport/http-transport.ts";
import { checkCounter, checkPathName } from "../transport/path-names.ts";

export type { WebSocketConstructor, WebSocketLike };

export interface HttpClaimsBackendOptions extends HttpTransportOptions {
  /**
   * WebSocket constructor for watches. Defaults to `globalThis.WebSocket` (browsers,
   * Workers, Node ≥ 22). On Node 20 pass the `ws` package's default export.
   */
  WebSocket?: WebSocketConstructor;
  /**
   * How the bearer token travels in the WebSocket handshake: an `Authorization` header
   * (what `ws` can send) or the subprotocol `shiftlock.bearer.<token>` (all browsers can
   * send). Default: `"header"` when `WebSocket` is injected, `"subprotocol"` otherwise.
   */
  webSocketAuth?: "header" | "subprotocol";
  /** Timers for watch pings and reconnect backoff. Default: the system clock. */
  clock?: Clock;
  /** Keep-alive ping period of watches, ms. Default 30 000. */
  watchPingIntervalMs?: number;
  /** Reconnect backoff bounds of watches, ms. Defaults 100 and 5 000. */
  watchReconnectMinMs?: number;
  watchReconnectMaxMs?: number;
}

type Body = Record<string, unknown>;

/** Drop undefined fields (the server rejects nothing for them, but keeps bodies minimal). */
function compact(body: Body): Body {
  return Object.fromEntries(Object.entries(body).filter(([, v]) => v !== undefined));
}

export class HttpClaimsBackend implements ClaimsBackend {
  private readonly transport: HttpTransport;
  private readonly options: HttpClaimsBackendOptions;
  private readonly clock: Clock;
  private readonly watches = new Set<SocketClaimWatch>();
  private closed = false;

  constructor(options: HttpClaimsBackendOptions) {
    checkPathName(options.namespace, "namespace");
    this.options = options;
    this.transport = new HttpTransport(options);
    this.clock = options.clock ?? systemClock;
  }

  private async claimCall(
    method: "GET" | "POST",
    claimName: string,
    route: readonly string[],
    body: Body | undefined,
    opts: CallOptions | undefined,
  ): Promise<ClaimRecord> {
    this.ensureOpen();
    checkPathName(claimName, "claim");
    const res = await this.transport.request(
      method,
      ["claims", claimName, ...route],
      body === undefined ? undefined : compact(body),
      opts?.signal,
    );
    return decodeClaimAnswer(res);
  }

  acquireClaim(req: AcquireRequest, opts?: CallOptions): Promise<ClaimRecord> {
    const { claimName, ...body } = req;
    return this.claimCall("POST", claimName, ["acquire"], body, opts);
  }

  renewClaim(req: RenewRequest, opts?: CallOptions): Promise<ClaimRecord> {
    const { claimName, ...body } = req;
    return this.claimCall("POST", claimName, ["renew"], body, opts);
  }

  prepareTransfer(req: TransferRequest, opts?: CallOptions): Promise<ClaimRecord> {
    const { claimName, ...body } = req;
    return this.claimCall("POST", claimName, ["transfer", "prepare"], body, opts);
  }

  commitTransfer(req: CommitRequest, opts?: CallOptions): Promise<ClaimRecord> {
    const { claimName, ...body } = req;
    return this.claimCall("POST", claimName, ["transfer", "commit"], body, opts);
  }

  abortTransfer(req: AbortRequest, opts?: CallOptions): Promise<ClaimRecord> {
    const { claimName, ...body } = req;
    return this.claimCall("POST", claimName, ["transfer", "abort"], body, opts);
  }

  releaseClaim(req: ReleaseRequest, opts?: CallOptions): Promise<ClaimRecord> {
    const { claimName, ...body } = req;
    return this.claimCall("POST", claimName, ["release"], body, opts);
  }

  getClaim(claimName: string, opts?: CallOptions): Promise<ClaimRecord> {
    return this.claimCall("GET", claimName, [], undefined, opts);
  }

  async registerGeneration(req: RegisterGenerationRequest, opts?: CallOptions): Promise<GenerationRecord> {
    this.ensureOpen();
    const body = { id: req.id, service: req.service, instanceId: req.instanceId };
    return decodeGenerationAnswer(await this.transport.request("POST", ["generations"], body, opts?.signal));
  }

  async updateGeneration(req: UpdateGenerationRequest, opts?: CallOptions): Promise<GenerationRecord> {
    this.ensureOpen();
    checkPathName(req.id, "id");
    const body = compact({ state: req.state, reason: req.reason });
    return decodeGenerationAnswer(await this.transport.request("PATCH", ["generations", req.id], body, opts?.signal));
  }

  async getGeneration(generationId: string, opts?: CallOptions): Promise<GenerationRecord> {
    this.ensureOpen();
    checkPathName(generationId, "id");
    return decodeGenerationAnswer(
      await this.transport.request("GET", ["generations", generationId], undefined, opts?.signal),
    );
  }

  watchClaim(claimName: string, opts?: WatchClaimOptions): ClaimWatch {
    this.ensureOpen();
    checkPathName(claimName, "claim");
    checkCounter(opts?.afterVersion, "afterVersion");
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
    let watch: SocketClaimWatch | undefined = undefined;
    watch = new SocketClaimWatch({
      url: (afterVersion) => {
        const query = afterVersion === undefined ? undefined : { afterVersion: formatCounter(afterVersion) };
        return this.transport.url(["claims", claimName, "watch"], query).replace(/^http/, "ws");
      },
      connect: (url) =>
        auth === "header"
          ? new Ctor(url, [], { headers: { Authorization: `Bearer ${token}` } })
          : new Ctor(url, [`shiftlock.bearer.${token}`]),
      probe: async (signal) => {
        try {
          await this.transport.request("GET", ["claims", claimName], undefined, signal);
        } catch (err) {
          // A watch of a claim nobody acquired yet is legitimate.
          if (!(err instanceof ShiftlockError && err.code === "claim_not_found")) throw err;
        }
      },
      clock: this.clock,
      afterVersion: opts?.afterVersion,
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

  close(): Promise<void> {
    this.closed = true;
    for (const w of [...this.watches]) w.close();
    this.watches.clear();
    return Promise.resolve();
  }

  private ensureOpen(): void {
    if (this.closed) throw new ShiftlockError("invalid_request", "client is closed");
  }
}
