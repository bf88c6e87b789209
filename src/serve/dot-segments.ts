/**
 * `.` and `..` path segments, as the Node front of `npm start` handles them: workerd would
 * resolve them before the Worker sees the path (`…/stores/s/keys/../capability` would reach
 * the store's capability route and succeed), where a `.` or `..` segment must never be a
 * success (docs/protocol.md: no name can be `.` or `..`). The front sees the raw request
 * target first and puts {@link DOT_SEGMENT_MARK} in place of each such segment.
 *
 * Guarantees: the mark is not a dot segment, and it is not valid percent-encoded UTF-8, so
 * the Worker refuses the path with `400 invalid_request` (`field: "path"`, the segment named
 * in the message, CORS headers and envelope as on any error) by its general rule for
 * malformed paths: the Worker knows nothing of the mark. Only the path is marked; the query
 * is left alone, and a segment that merely contains dots (`...`, `.a`) is a name.
 *
 * Does not: run anywhere but in the local front. Deployed, the edge resolves dot segments
 * before the Worker, as workerd does locally (docs/fuzzing.md).
 */

/**
 * What the front puts in place of a `.` or `..` segment. `%FF` is no UTF-8 byte sequence,
 * so no name can collide with it, and the rest says what it stands for when the Worker's
 * refusal quotes it.
 */
export const DOT_SEGMENT_MARK = "%FF.dot-segment";

const DOT_SEGMENT = /^(?:\.|%2e){1,2}$/i;

/** True when a raw (still percent-encoded) path segment is `.` or `..` to a URL parser. */
export function isDotSegment(rawSegment: string): boolean {
  return DOT_SEGMENT.test(rawSegment);
}

/**
 * The request target with every `.` or `..` path segment (in any percent-encoding) replaced
 * by {@link DOT_SEGMENT_MARK}. The query is left alone.
 */
export function markDotSegments(target: string): string {
  const queryAt = target.indexOf("?");
  const path = queryAt === -1 ? target : target.slice(0, queryAt);
  const segments = path.split("/");
  if (!segments.some(isDotSegment)) return target;
  const marked = segments.map((segment) => (isDotSegment(segment) ? DOT_SEGMENT_MARK : segment)).join("/");
  return queryAt === -1 ? marked : marked + target.slice(queryAt);
}
