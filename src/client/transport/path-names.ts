/**
 * Names that travel in URL paths (namespace, claim, generation id), checked on the client.
 *
 * Guarantees: a name is refused with `invalid_request` naming the field when it breaks
 * SPEC §2's rules *or* is `.` or `..`: WHATWG URL parsing (every `fetch`) resolves those as
 * dot segments even percent-encoded (`%2E`), so `/claims/./watch` would silently address
 * the claim named `watch`. Both backends apply the same check, so they agree. A watch's
 * `afterVersion` is range-checked up front too: a refused handshake would otherwise look like
 * a transient failure to a reconnecting watch.
 */
import { ShiftlockError } from "../../protocol/errors.ts";
import { U64_LIMIT } from "../../protocol/counter.ts";
import { nameProblem } from "../../protocol/names.ts";

/** Why `value` cannot be used as a path segment, or undefined. */
export function pathNameProblem(value: string): string | undefined {
  if (value === "." || value === "..") return "must not be '.' or '..' (URLs resolve them as dot segments)";
  return nameProblem(value);
}

/** Throw `invalid_request` (with `field`) unless `value` is a valid path name. */
export function checkPathName(value: string, field: string): void {
  const problem = pathNameProblem(value);
  if (problem !== undefined) throw new ShiftlockError("invalid_request", `${field} ${problem}`, { field });
}

/** Throw `invalid_request` unless `value` is absent or a 64-bit counter (0 … 2^64 − 1). */
export function checkCounter(value: bigint | undefined, field: string): void {
  if (value !== undefined && (value < 0n || value > U64_LIMIT)) {
    throw new ShiftlockError("invalid_request", `${field} must be within 0..2^64-1`, { field });
  }
}
