/**
 * Names that travel in URL paths (namespace, claim, generation id), checked on the client.
 *
 * Guarantees: a name is refused with `invalid_request` naming the field when it breaks
 * SPEC §2's rules *or* is `.` or `..`: WHATWG URL parsing (every `fetch`) resolves those as
 * dot segments even percent-encoded (`%2E`), so `/claims/./watch` would silently address
 * the claim named `watch`. Both backends apply the same check, so they agree.
 */
import { ShiftlockError } from "../protocol/errors.ts";
import { nameProblem } from "../protocol/names.ts";

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
