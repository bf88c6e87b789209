/**
 * The one error class of shiftlock and the table of its codes.
 *
 * Guarantees: every failure the service or the client reports is a {@link ShiftlockError}
 * whose `code` is one of {@link ERROR_STATUS}'s keys; the HTTP status of a code is decided
 * here and nowhere else. The client rebuilds the same class from the wire envelope, so
 * `err.code === "claim_held"` works identically against the in-memory backends and the
 * real service.
 *
 * Does not: decide *when* a code applies (the state machines do) or render responses
 * (the HTTP layer does, using {@link errorEnvelope}).
 */

/** The error table (docs/protocol.md): code → HTTP status. The single source of that mapping. */
export const ERROR_STATUS = {
  invalid_request: 400,
  unsupported: 400,
  unauthorized: 401,
  forbidden: 403,
  claim_not_found: 404,
  generation_not_found: 404,
  not_found: 404,
  claim_held: 409,
  not_owner: 409,
  stale_token: 409,
  no_transfer: 409,
  concurrent_transfer: 409,
  token_overflow: 409,
  operation_id_conflict: 409,
  invalid_state: 409,
  generation_exists: 409,
  lease_held: 409,
  stale_generation: 409,
  evicted: 409,
  no_lease: 409,
  lease_lost: 410,
  payload_too_large: 413,
  rate_limited: 429,
  internal: 500,
  overloaded: 503,
} as const;

/** A stable, machine-readable error code from docs/protocol.md#wire-conventions. */
export type ErrorCode = keyof typeof ERROR_STATUS;

/** HTTP status for a code. */
export type ErrorStatus = (typeof ERROR_STATUS)[ErrorCode];

/** Extra, code-specific fields that travel inside `error` (e.g. `claim`, `field`). */
export type ErrorDetails = Record<string, unknown>;

/** The JSON body of every non-2xx response; `Details` types the code-specific fields. */
export interface ErrorEnvelope<Details extends object = ErrorDetails> {
  error: { code: ErrorCode; message: string } & Details;
}

/** Default human text per code; callers may give a more specific message. */
const DEFAULT_MESSAGES: Record<ErrorCode, string> = {
  invalid_request: "the request is malformed",
  unsupported: "this scope does not support the operation",
  unauthorized: "missing or unknown bearer token",
  forbidden: "the token is not allowed to do this",
  claim_not_found: "claim not found",
  generation_not_found: "generation not found",
  not_found: "no such route",
  claim_held: "claim held by another generation",
  not_owner: "caller is not the claim owner",
  stale_token: "stale fencing token",
  no_transfer: "no transfer is pending",
  concurrent_transfer: "a different transfer is pending",
  token_overflow: "fencing token cannot advance past 2^64-2",
  operation_id_conflict: "operation id reused with a different request",
  invalid_state: "illegal generation state transition",
  generation_exists: "generation exists with another service or instance",
  lease_held: "write lease is held",
  stale_generation: "expected generation does not match",
  evicted: "the presented token belonged to an owner an operator evicted",
  no_lease: "the generation holds no live lease",
  lease_lost: "write lease released, expired or superseded",
  payload_too_large: "request body too large",
  rate_limited: "rate limited",
  internal: "internal error",
  overloaded: "the object or the platform is overloaded; retry after Retry-After",
};

/** True for strings that are a known error code. */
export function isErrorCode(value: unknown): value is ErrorCode {
  return typeof value === "string" && Object.hasOwn(ERROR_STATUS, value);
}

/**
 * The single error class. `code` selects the status; `details` are rendered inside the
 * envelope's `error` object next to `code` and `message`.
 *
 * @example
 * throw new ShiftlockError("invalid_request", "ttlMs must be within 100..86400000", { field: "ttlMs" });
 */
export class ShiftlockError extends Error {
  override readonly name = "ShiftlockError";
  readonly code: ErrorCode;
  readonly details: ErrorDetails;

  constructor(code: ErrorCode, message?: string, details: ErrorDetails = {}, options?: { cause?: unknown }) {
    super(message ?? DEFAULT_MESSAGES[code], options);
    this.code = code;
    this.details = details;
  }

  /** The HTTP status the protocol assigns to this error's code. */
  get status(): ErrorStatus {
    return ERROR_STATUS[this.code];
  }

  /** The wire form of this error. */
  toEnvelope(): ErrorEnvelope {
    return errorEnvelope(this.code, this.message, this.details);
  }

  /** Rebuild an error from a wire envelope (as the client receives it). */
  static fromEnvelope(body: unknown, status: number): ShiftlockError {
    const err = (body as { error?: unknown } | null)?.error;
    if (err !== null && typeof err === "object") {
      const { code, message, ...details } = err as Record<string, unknown>;
      if (isErrorCode(code)) {
        return new ShiftlockError(code, typeof message === "string" ? message : undefined, details);
      }
    }
    return new ShiftlockError(status >= 500 ? "internal" : "invalid_request", `unexpected HTTP ${status}`, { status });
  }
}

/** Build the error envelope (typed by its details, so it can cross Durable Object RPC). */
export function errorEnvelope<Details extends object = ErrorDetails>(
  code: ErrorCode,
  message?: string,
  details?: Details,
): ErrorEnvelope<Details> {
  return { error: { ...(details as Details), code, message: message ?? DEFAULT_MESSAGES[code] } };
}

/** True when `err` is a ShiftlockError with the given code. */
export function hasCode(err: unknown, code: ErrorCode): err is ShiftlockError {
  return err instanceof ShiftlockError && err.code === code;
}
