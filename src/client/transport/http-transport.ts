/**
 * The HTTP transport of the client: one JSON request to the shiftlock API.
 *
 * Guarantees:
 * - Runs wherever `fetch` exists (Workers, Node ≥ 20, browsers); `fetch` is injectable.
 * - Sends `Authorization: Bearer <token>`; path segments are percent-encoded with
 *   `encodeURIComponent`, so a `/` inside a name travels as `%2F` (SPEC §2).
 * - `bigint` values in a request body are sent as canonical decimal strings.
 * - A non-2xx answer rejects with {@link ShiftlockError} rebuilt from the envelope (same
 *   class, `code` and details as the server raised; `claim_held`'s `details.claim` decoded
 *   to a `ClaimRecord`); a `Retry-After` header lands in `details.retryAfterMs`.
 * - A network failure (no HTTP answer at all) rejects with a ShiftlockError of code
 *   `internal` whose `details.network` is `true` and whose `cause` is the underlying error:
 *   the request may or may not have reached the server (retry with the same operation id).
 * - Cancellation via `signal` rejects with the signal's reason, unwrapped, as `fetch` does.
 *
 * Does not: retry, or decode response bodies beyond JSON (the backends decode records).
 */
import { ShiftlockError } from "../../protocol/errors.ts";
import { withDecodedClaim } from "../claims/decode.ts";

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
}

/** A JSON answer: the status and the parsed body (undefined for an empty body). */
export interface JsonResponse {
  status: number;
  body: unknown;
}

/** JSON with bigint → decimal string (the wire form of every 64-bit counter). */
export function encodeJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => (typeof v === "bigint" ? v.toString(10) : v));
}

/** True when `err` is the transport's "no HTTP answer" failure. */
export function isNetworkError(err: unknown): err is ShiftlockError {
  return err instanceof ShiftlockError && err.details["network"] === true;
}

/** Percent-encode each path segment (names may contain `/`, spaces, any Unicode). */
export function encodePath(segments: readonly string[]): string {
  return segments.map((s) => `/${encodeURIComponent(s)}`).join("");
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
  }

  /** Absolute URL of `segments` under `/v1/ns/{namespace}`. */
  url(segments: readonly string[], query?: Record<string, string>): string {
    const qs = query === undefined ? "" : `?${new URLSearchParams(query).toString()}`;
    return `${this.baseUrl}/v1/ns/${encodeURIComponent(this.namespace)}${encodePath(segments)}${qs}`;
  }

  /** The bearer token, for the WebSocket handshake. */
  bearerToken(): string {
    return this.token;
  }

  /**
   * Send one request and return the 2xx answer; anything else rejects (see module doc).
   */
  async request(
    method: "GET" | "POST" | "PATCH" | "DELETE",
    segments: readonly string[],
    body?: unknown,
    signal?: AbortSignal,
  ): Promise<JsonResponse> {
    signal?.throwIfAborted();
    const headers: Record<string, string> = { Authorization: `Bearer ${this.token}`, Accept: "application/json" };
    const init: RequestInit = { method, headers };
    if (body !== undefined) {
      headers["Content-Type"] = "application/json";
      init.body = encodeJson(body);
    }
    if (signal !== undefined) init.signal = signal;
    let res: Response;
    try {
      res = await this.fetchImpl(this.url(segments), init);
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
    if (res.ok) return { status: res.status, body: parsed };
    const error = withDecodedClaim(ShiftlockError.fromEnvelope(parsed, res.status));
    const after = retryAfterMs(res.headers.get("Retry-After"));
    if (after !== undefined) error.details["retryAfterMs"] = after;
    throw error;
  }
}

function describe(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
