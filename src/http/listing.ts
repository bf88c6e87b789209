/**
 * Listing and stats routes (docs/protocol.md#listing, docs/listing.md): the declared routes of
 * protocol/listing-routes.ts answered from the namespace's index object.
 *
 * Guarantees: the cursor is checked here (core/listing-cursor.ts) before the index is
 * addressed, so a tampered or foreign cursor is 400 `invalid_request` (field `cursor`) and
 * reads nothing; each namespace has its own index object (`objectName(ns, "index")`), so no
 * namespace sees another's entries; `limit` defaults to 100.
 *
 * Does not: read the claim, generation or scope objects (a GET of one of them is exact; the
 * index may lag by up to 2 s).
 */
import type { Hono } from "hono";
import { type CursorScope, decodeCursor, encodeCursor } from "../core/listing-cursor.ts";
import type { NamespaceIndex } from "../listing/index-object.ts";
import type { IndexKind } from "../core/listing-entry.ts";
import { LIST_LIMIT_DEFAULT } from "../protocol/listing.ts";
import { listClaims, listGenerations, listScopes, namespaceStats } from "../protocol/listing-routes.ts";
import type { AppEnv } from "./app-env.ts";
import type { AppContext } from "./mount.ts";
import { mount } from "./mount.ts";
import type { WireResponse } from "../protocol/wire-response.ts";
import { objectName } from "../durable/object-names.ts";

function indexStub(c: AppContext, ns: string): DurableObjectStub<NamespaceIndex> {
  return c.env.INDEX.getByName(objectName(ns, "index"));
}

/** What one list request asks of the index. */
interface ListRequest {
  kind: IndexKind;
  /** The answer's list field, also the cursor's list name. */
  field: "claims" | "generations" | "scopes";
  cursor: string | undefined;
  limit: number | undefined;
  prefix?: string | undefined;
  /** Exact-match filters by query name (the index store knows their columns). */
  filters: Record<string, string | undefined>;
}

async function listPage(c: AppContext, ns: string, r: ListRequest): Promise<WireResponse> {
  // A cursor is valid only for the namespace, list and filters it was issued for.
  const scope: CursorScope = { namespace: ns, list: r.field, filters: [r.prefix, ...Object.values(r.filters)] };
  const after = r.cursor === undefined ? undefined : decodeCursor(scope, r.cursor);
  const limit = r.limit ?? LIST_LIMIT_DEFAULT;
  const page = await indexStub(c, ns).page({ kind: r.kind, after, prefix: r.prefix, filters: r.filters, limit });
  const cursor = page.more && page.lastKey !== undefined ? encodeCursor(scope, page.lastKey) : null;
  return { status: 200, body: { [r.field]: page.records, cursor } };
}

export function mountListingRoutes(app: Hono<AppEnv>): void {
  mount(app, listClaims, (c, { params, query }) =>
    listPage(c, params.ns, {
      kind: "claim",
      field: "claims",
      cursor: query.cursor,
      limit: query.limit,
      prefix: query.prefix,
      filters: { phase: query.phase, owner: query.owner },
    }),
  );
  mount(app, listGenerations, (c, { params, query }) =>
    listPage(c, params.ns, {
      kind: "generation",
      field: "generations",
      cursor: query.cursor,
      limit: query.limit,
      filters: { service: query.service, state: query.state },
    }),
  );
  mount(app, listScopes, (c, { params, query }) =>
    listPage(c, params.ns, {
      kind: "scope",
      field: "scopes",
      cursor: query.cursor,
      limit: query.limit,
      filters: { volumeId: query.volumeId },
    }),
  );
  mount(app, namespaceStats, async (c, { params }) => ({ status: 200, body: await indexStub(c, params.ns).stats() }));
}
