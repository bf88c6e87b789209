/**
 * What the Worker answers when a Durable Object call fails in the platform rather than in
 * shiftlock (docs/protocol.md#overload): the one place that mapping is decided.
 *
 * Guarantees:
 * - An error the platform marks `overloaded` (the object's queue is full) or `retryable` (a
 *   transient failure: the object was reset, a network hiccup inside Cloudflare) becomes 503
 *   `overloaded` with `Retry-After`, never 500 `internal`.
 * - A call to an overloaded object is never repeated here: a retry deepens the overload.
 *   A `retryable` error that is not an overload is retried once, and only when the request
 *   may be repeated (its route's declaration, src/protocol/route.ts `mayRepeat`).
 * - Anything else (a {@link ShiftlockError} passes through; any other error is a bug and
 *   stays one) is rethrown unchanged.
 *
 * Does not: retry anything twice, or sleep (the caller's client waits, honouring `Retry-After`).
 */
import { ShiftlockError } from "../protocol/errors.ts";

/** How long a caller should wait after an overload, ms (`Retry-After`, in whole seconds). */
export const OVERLOAD_RETRY_AFTER_MS = 1_000;

/** The flags the platform sets on an error thrown by a Durable Object call. */
interface PlatformFlags {
  overloaded?: unknown;
  retryable?: unknown;
}

function flags(err: unknown): PlatformFlags {
  return typeof err === "object" && err !== null && !(err instanceof ShiftlockError) ? err : {};
}

/** The `overloaded` refusal for a platform error, or undefined when `err` is not one. */
export function platformRefusal(err: unknown): ShiftlockError | undefined {
  const { overloaded, retryable } = flags(err);
  if (overloaded !== true && retryable !== true) return undefined;
  const message =
    overloaded === true ? "the object is overloaded; retry after Retry-After" : "transient platform error; retry";
  return new ShiftlockError("overloaded", message, { retryAfterMs: OVERLOAD_RETRY_AFTER_MS });
}

/**
 * Run one call to a Durable Object under the rules above. `repeatable`: the request may be
 * sent twice (see the module doc).
 */
export async function callObject<T>(repeatable: boolean, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (err) {
    const { overloaded, retryable } = flags(err);
    if (!(repeatable && retryable === true && overloaded !== true)) throw platformRefusal(err) ?? err;
  }
  try {
    return await call();
  } catch (again) {
    throw platformRefusal(again) ?? again;
  }
}
