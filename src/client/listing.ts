/**
 * Listing on the client side (docs/protocol.md#listing): async iterators that follow cursors page by page,
 * and the in-memory backends' pages, rendered exactly as the index answers them.
 *
 * Guarantees:
 * - {@link followCursors} asks for the next page only when the previous one is consumed,
 *   stops at `cursor: null`, and passes each cursor back unchanged (it is opaque).
 * - {@link memoryPage} orders by UTF-8 bytes, filters, limits (default 100, 1–500) and makes
 *   and checks cursors with core/listing-cursor.ts, then decodes its answer with the route's
 *   own response schema, so a page from memory is the same value as one over HTTP. A bad
 *   cursor or limit is `invalid_request` on both backends.
 *
 * Does not: promise a snapshot. Pages are read one after another; over HTTP the index may
 * lag the objects by up to 2 s, and what changes between pages may be seen or not.
 */
import { type CursorScope, compareUtf8, decodeCursor, encodeCursor } from "../core/listing-cursor.ts";
import { LIST_LIMIT_DEFAULT } from "../protocol/listing.ts";
import type { RouteResult, RouteSpec } from "../protocol/route.ts";
import { decodeAnswer, encodeQuery } from "./transport/route-codec.ts";

/** Per-list options shared by every list call. */
export interface PageOptions {
  /** Page size asked of the server, 1–500 (default 100). The iterator yields every item. */
  limit?: number | undefined;
  signal?: AbortSignal | undefined;
}

/** Yield every item of every page, fetching the next page once the previous is consumed. */
export async function* followCursors<T>(
  fetchPage: (cursor: string | undefined) => Promise<{ items: readonly T[]; cursor: string | null }>,
): AsyncGenerator<T, void, undefined> {
  let cursor: string | undefined;
  do {
    const page = await fetchPage(cursor);
    yield* page.items;
    cursor = page.cursor ?? undefined;
  } while (cursor !== undefined);
}

/** One in-memory listing: its items with their keys, the query as sent, the filter test. */
export interface MemoryListing<W> {
  route: RouteSpec;
  field: string;
  scope: CursorScope;
  query: { limit?: number | undefined; cursor?: string | undefined } & Record<string, unknown>;
  items: readonly { key: string; wire: W }[];
  keep: (wire: W) => boolean;
}

/** A page of an in-memory listing, as the index would answer it (see the module doc). */
export function memoryPage<R extends RouteSpec, W>(listing: MemoryListing<W> & { route: R }): RouteResult<R> {
  // The same validation the server applies to the query string (limit 1–500, names).
  encodeQuery(listing.route, listing.query);
  const after = listing.query.cursor === undefined ? undefined : decodeCursor(listing.scope, listing.query.cursor);
  const limit = listing.query.limit ?? LIST_LIMIT_DEFAULT;
  const sorted = [...listing.items]
    .filter((i) => (after === undefined || compareUtf8(i.key, after) > 0) && listing.keep(i.wire))
    .sort((a, b) => compareUtf8(a.key, b.key));
  const shown = sorted.slice(0, limit);
  const last = shown.at(-1);
  const cursor = sorted.length > limit && last !== undefined ? encodeCursor(listing.scope, last.key) : null;
  return decodeAnswer(listing.route, {
    status: 200,
    body: { [listing.field]: shown.map((i) => i.wire), cursor },
  });
}
