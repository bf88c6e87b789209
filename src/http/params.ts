/**
 * Path parameters: names travel percent-encoded (a `/` inside a name is `%2F`).
 *
 * Guarantees: a path whose percent-encoding is malformed, or a name that breaks the
 * docs/protocol.md#wire-conventions name rules, is `invalid_request` naming the parameter, before any object is
 * addressed.
 */
import { DOT_SEGMENT_MARK, nameProblem } from "../protocol/names.ts";
import { ShiftlockError } from "../protocol/errors.ts";

/**
 * Reject paths that are not valid percent-encoded UTF-8 (Hono would keep them raw). A URL
 * without `%` has nothing to decode, so the common case parses nothing. The mark a local
 * front puts in place of a dot segment is one such path, refused as what it stands for.
 */
export function checkPathEncoding(url: string): void {
  if (!url.includes("%")) return;
  for (const segment of new URL(url).pathname.split("/")) {
    try {
      decodeURIComponent(segment);
    } catch {
      if (segment === DOT_SEGMENT_MARK) {
        throw new ShiftlockError("invalid_request", "path has a '.' or '..' segment: no name can be '.' or '..'", {
          field: "path",
        });
      }
      throw new ShiftlockError("invalid_request", "path is not valid percent-encoded UTF-8", { field: "path" });
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
