/**
 * Path parameters: names travel percent-encoded (a `/` inside a name is `%2F`).
 *
 * Guarantees: a path whose percent-encoding is malformed, or a name that breaks the
 * docs/protocol.md#wire-conventions name rules, is `invalid_request` naming the parameter, before any object is
 * addressed.
 */
import { nameProblem } from "../protocol/names.ts";
import { ShiftlockError } from "../protocol/errors.ts";

/** How much of a malformed segment the refusal quotes. */
const QUOTED_SEGMENT_MAX = 64;

/**
 * Reject paths that are not valid percent-encoded UTF-8 (Hono would keep them raw), quoting
 * the first such segment. A URL without `%` has nothing to decode, so the common case parses
 * nothing. (`npm start`'s front puts such a segment, `%FF.dot-segment`, in place of a `.` or
 * `..` segment that workerd would otherwise resolve: this refusal is all the Worker does
 * about it.)
 */
export function checkPathEncoding(url: string): void {
  if (!url.includes("%")) return;
  for (const segment of new URL(url).pathname.split("/")) {
    try {
      decodeURIComponent(segment);
    } catch {
      const quoted = segment.length > QUOTED_SEGMENT_MAX ? `${segment.slice(0, QUOTED_SEGMENT_MAX)}…` : segment;
      throw new ShiftlockError("invalid_request", `path segment "${quoted}" is not valid percent-encoded UTF-8`, {
        field: "path",
      });
    }
  }
}

/** Anything with Hono's `req.param` (any route's context). */
export interface HasParams {
  req: { param(key: string): string | undefined };
}

/**
 * The decoded, validated name in path parameter `key`; `invalid_request` with
 * `error.field = key` when it breaks the name rules.
 */
export function nameParam(c: HasParams, key: string): string {
  const value = c.req.param(key) ?? "";
  const problem = nameProblem(value);
  if (problem !== undefined) throw new ShiftlockError("invalid_request", `${key} ${problem}`, { field: key });
  return value;
}
