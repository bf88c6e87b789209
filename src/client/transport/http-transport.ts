/**
 * The HTTP transport of the client: one request to a declared route of the shiftlock API.
 *
 * Guarantees:
 * - `call(route, input)` is typed from the route's declaration: its path parameters, query,
 *   body and result are the schemas' own types, so a field added to a schema reaches every
 *   caller through the type checker. The URL is the route's path template filled with
 *   percent-encoded names (a `/` inside a name travels as `%2F`, docs/protocol.md#wire-conventions) under this
 *   transport's namespace; query and body are encoded, and the answer decoded, by the
 *   route's schemas (see route-codec.ts, shared with the in-memory backends).
 * - Runs wherever `fetch` exists (Workers, Node ≥ 20, browsers); `fetch` is injectable, and
 *   the global one is called bound (an unbound `fetch` throws "Illegal invocation").
 * - Sends `Authorization: Bearer <token>` on every request.
 * - A non-2xx answer rejects with {@link ShiftlockError} rebuilt from the envelope (same
 *   class, `code` and details the server raised); a `Retry-After` header lands in
 *   `details.retryAfterMs`.
 * - A network failure (no HTTP answer at all) rejects with a ShiftlockError of code
 *   `internal` whose `details.network` is `true` and whose `cause` is the underlying error:
 *   the request may or may not have reached the server (retry with the same operation id).
 * - Cancellation via `signal` rejects with the signal's reason, unwrapped, as `fetch` does.
 *
 * - A request its route declares repeatable (src/protocol/route.ts `repeatable`: reads,
 *   keepalives, releases, mutations carrying an `operationId`) is retried on a network
 *   failure, 503 `overloaded` or 429 `rate_limited` for up to `retryForMs` (default
 *   {@link DEFAULT_RETRY_FOR_MS}) on the injected clock, or until `signal` aborts, through the
 *   client's one retry rule (retry-policy.ts: jittered backoff, never before `Retry-After`).
 *   Any other request is sent once.
 *
 * Does not: open WebSockets (watch-socket.ts).
 */
import { ShiftlockError } from "../../protocol/errors.ts";
import type { RouteQuery, RouteResult, RouteSpec } from "../../protocol/route.ts";
import { fillPath, mayRepeat, pathParamNames } from "../../protocol/route.ts";
import { type Clock, systemClock } from "../../core/clock.ts";
import { retrying } from "./retry-policy.ts";
import {
  checkPathParams,
  decodeAnswer,
  encodeBody,
  encodeQuery,
  type CallInput,
  type CallParams,
  type WireAnswer,
} from "./route-codec.ts";

/** The `fetch` signature the client needs (the global one, or a test double). */
export type FetchLike = (input: string, init: RequestInit) => Promise<Response>;

export interface HttpTransportOptions {
  /** Service origin (and optional path prefix), e.g. `https://locks.example.com`. */
  baseUrl: string;
  /** Bearer token sent on every request. */
  token: string;
  /** Namespace (tenant) every request is scoped to. */
  namespace: string;
  /** Defaults to `globalThis.fetch`. */
  fetch?: FetchLike;
  /** Timers of retries. Default: the system clock. */
  clock?: Clock;
  /**
   * How long a repeatable request keeps being retried, ms (0: never retried). Default
   * {@link DEFAULT_RETRY_FOR_MS}. A call's `signal` ends it sooner.
   */
  retryForMs?: number;
}

/** How long a repeatable request is retried by default, ms. */
export const DEFAULT_RETRY_FOR_MS = 10_000;

/** True when `err` is the transport's "no HTTP answer" failure. */
export function isNetworkError(err: unknown): err is ShiftlockError {
  return err instanceof ShiftlockError && err.details["network"] === true;
}

function retryAfterMs(header: string | null): number | undefined {
  if (header === null) return undefined;
  const seconds = Number(header);
  return Number.isFinite(seconds) && seconds >= 0 ? Math.round(seconds * 1000) : undefined;
}

export class HttpTransport {
  readonly baseUrl: string;
  readonly namespace: string;
  private readonly token: string;
  private readonly fetchImpl: FetchLike;
  private readonly clock: Clock;
  private readonly retryForMs: number;

  constructor(options: HttpTransportOptions) {
    if (options.baseUrl === "")
      throw new ShiftlockError("invalid_request", "baseUrl is required", { field: "baseUrl" });
    this.baseUrl = options.baseUrl.replace(/\/+$/, "");
    this.namespace = options.namespace;
    this.token = options.token;
    if (options.fetch === undefined && typeof globalThis.fetch !== "function") {
      throw new ShiftlockError("invalid_request", "no fetch available: pass options.fetch", { field: "fetch" });
    }
    // Bind the global: calling an unbound `fetch` throws "Illegal invocation" in browsers/Workers.
    this.fetchImpl = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
    this.clock = options.clock ?? systemClock;
    this.retryForMs = Math.max(0, options.retryForMs ?? DEFAULT_RETRY_FOR_MS);
  }

  /** The bearer token, for the WebSocket handshake. */
  bearerToken(): string {
    return this.token;
  }

  /**
   * Absolute URL of `route` with `params` (names checked, percent-encoded) and `query`
   * (encoded by the route's schema). Throws `invalid_request` naming a bad field.
   */
  url<R extends RouteSpec>(route: R, params: CallParams<R>, query?: RouteQuery<R>): string {
    return this.fill(route, params, query);
  }

  /** Send one request to `route` and decode its answer (see the module doc). */
  async call<R extends RouteSpec>(route: R, input: CallInput<R>, signal?: AbortSignal): Promise<RouteResult<R>> {
    const { params, query, body } = input as {
      params?: Readonly<Record<string, string>>;
      query?: unknown;
      body?: unknown;
    };
    const url = this.fill(route, params ?? {}, query);
    const wireBody = encodeBody(route, body);
    const once = async (): Promise<RouteResult<R>> =>
      decodeAnswer(route, await this.send(route.method, url, wireBody, signal));
    if (this.retryForMs === 0 || !mayRepeat(route, wireBody)) return once();
    return retrying({ clock: this.clock, untilMs: this.clock.nowMs() + this.retryForMs, signal }, once);
  }

  private fill(route: RouteSpec, params: Readonly<Record<string, string>>, query: unknown): string {
    const all: Record<string, string> = { ...params, ns: this.namespace };
    for (const name of pathParamNames(route.path)) {
      if (all[name] === undefined) throw new ShiftlockError("invalid_request", `${name} is required`, { field: name });
    }
    checkPathParams(route, all);
    return `${this.baseUrl}${fillPath(route.path, all)}${encodeQuery(route, query)}`;
  }

  private async send(method: string, url: string, body: unknown, signal: AbortSignal | undefined): Promise<WireAnswer> {
    signal?.throwIfAborted();
    const headers: Record<string, string> = { Authorization: `Bearer ${this.token}`, Accept: "application/json" };
    const init: RequestInit = { method, headers };
    if (body !== undefined) {
      headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    if (signal !== undefined) init.signal = signal;
    let res: Response;
    try {
      res = await this.fetchImpl(url, init);
    } catch (err) {
      if (signal?.aborted === true) throw signal.reason;
      throw new ShiftlockError("internal", `network error: ${describe(err)}`, { network: true }, { cause: err });
    }
    let parsed: unknown;
    try {
      const text = await res.text();
      parsed = text === "" ? undefined : JSON.parse(text);
    } catch {
      if (signal?.aborted === true) throw signal.reason;
      if (res.ok)
        throw new ShiftlockError("internal", `malformed response (HTTP ${res.status})`, { status: res.status });
      parsed = undefined;
    }
    return { status: res.status, body: parsed, retryAfterMs: retryAfterMs(res.headers.get("Retry-After")) };
  }
}

function describe(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
