/**
 * Coord routes (SPEC §4), mounted at `/v1/ns/:ns/volumes`.
 *
 * A scope is addressed as `/{volumeId}/stores/{objectStoreId}` (object-store scope),
 * `/{volumeId}/keys/{key}` or `/{volumeId}/stores/{objectStoreId}/keys/{key}` (keyed
 * scopes); each scope is its own Durable Object named
 * `objectName(ns, "scope", volumeId, objectStoreId or "", key or "")` — names are ≥ 1 byte,
 * so "" never collides with a real id, and the JSON-array name is injective.
 *
 * Guarantees: input is validated (names, body, counters, root size) before the object is
 * addressed; keyed scopes refuse watch here and snapshot/refresh/publish in the machine
 * (`unsupported`); a waiting acquire whose client disconnects is cancelled in the object
 * (via `Request.signal`, compatibility flag `enable_request_signal`), which also gives back
 * a grant that could no longer be delivered.
 *
 * Does not: authenticate (app.ts does it for every `/v1` route before reaching here).
 */
import { Hono } from "hono";
import type { Context } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { z } from "zod";
import {
  DEFAULT_LEASE_TTL_MS,
  type ScopeId,
  acquireBodySchema,
  isKeyedScope,
  keepaliveBodySchema,
  publishBodySchema,
  refreshBodySchema,
  watchQuerySchema,
} from "../protocol/coord.ts";
import { ShiftlockError } from "../protocol/errors.ts";
import { SCOPE_WATCH_PARAMS } from "../coord/scope-object.ts";
import type { ScopeObject } from "../coord/scope-object.ts";
import type { WireResponse } from "../core/scope-response.ts";
import type { AppEnv } from "./app-env.ts";
import { offeredBearerSubprotocol } from "./auth.ts";
import { jsonBody, queryParams } from "./body.ts";
import { objectName } from "./object-names.ts";
import { nameParam } from "./params.ts";

type CoordContext = Context<AppEnv>;

const emptyQuery = z.strictObject({});
const noop = (): void => undefined;

/** The scope named by the path (validated), and its object. */
function scopeOf(c: CoordContext): { scope: ScopeId; stub: DurableObjectStub<ScopeObject> } {
  const volumeId = nameParam(c, "volumeId");
  const objectStoreId = c.req.param("objectStoreId") === undefined ? "" : nameParam(c, "objectStoreId");
  const key = c.req.param("key") === undefined ? "" : nameParam(c, "key");
  const scope = { volumeId, objectStoreId, key };
  const name = objectName(c.get("namespace"), "scope", volumeId, objectStoreId, key);
  return { scope, stub: c.env.SCOPES.getByName(name) };
}

/** Answer with the object's response (plain data from RPC). */
function send(c: CoordContext, res: WireResponse): Response {
  if (res.status === 204) return c.body(null, 204);
  if (res.status === 429) {
    const retryAfterMs = (res.body as { error?: { retryAfterMs?: unknown } }).error?.retryAfterMs;
    const seconds = typeof retryAfterMs === "number" ? Math.max(1, Math.ceil(retryAfterMs / 1000)) : 1;
    c.header("Retry-After", String(seconds));
  }
  return c.json(res.body as object, res.status as ContentfulStatusCode);
}

/** The routes of one scope; mounted under each of the three scope prefixes. */
const scopeRoutes = new Hono<AppEnv>();

scopeRoutes.get("/capability", async (c) => {
  const { scope, stub } = scopeOf(c);
  queryParams(c, emptyQuery);
  return send(c, await stub.capability(scope));
});

scopeRoutes.get("/snapshot", async (c) => {
  const { scope, stub } = scopeOf(c);
  queryParams(c, emptyQuery);
  return send(c, await stub.snapshot(scope));
});

scopeRoutes.post("/leases", async (c) => {
  const { scope, stub } = scopeOf(c);
  const body = await jsonBody(c, acquireBodySchema);
  const waitMs = body.waitMs ?? 0;
  const waiterId = body.waiterId ?? crypto.randomUUID();
  const request = { participantId: body.participantId, ttlMs: body.ttlMs ?? DEFAULT_LEASE_TTL_MS, waitMs, waiterId };
  if (waitMs === 0) return send(c, await stub.acquire(scope, request));
  // The object holds a waiting request open. If our client goes away, tell the object so
  // the waiter leaves the queue (or its undeliverable grant is released at once).
  const signal = c.req.raw.signal;
  const onAbort = (): void => {
    const cancelled: Promise<unknown> = stub.cancelWait(scope, waiterId);
    c.executionCtx.waitUntil(cancelled.then(noop, noop));
  };
  signal.addEventListener("abort", onAbort, { once: true });
  try {
    return send(c, await stub.acquire(scope, request));
  } finally {
    signal.removeEventListener("abort", onAbort);
  }
});

scopeRoutes.post("/leases/:leaseId/keepalive", async (c) => {
  const { scope, stub } = scopeOf(c);
  const leaseId = leaseParam(c);
  const body = await jsonBody(c, keepaliveBodySchema);
  return send(c, await stub.keepalive(scope, leaseId, body.ttlMs));
});

scopeRoutes.post("/leases/:leaseId/refresh", async (c) => {
  const { scope, stub } = scopeOf(c);
  const leaseId = leaseParam(c);
  await jsonBody(c, refreshBodySchema);
  return send(c, await stub.refresh(scope, leaseId));
});

scopeRoutes.post("/leases/:leaseId/publish", async (c) => {
  const { scope, stub } = scopeOf(c);
  const leaseId = leaseParam(c);
  const body = await jsonBody(c, publishBodySchema);
  return send(c, await stub.publish(scope, leaseId, body));
});

scopeRoutes.delete("/leases/:leaseId", async (c) => {
  const { scope, stub } = scopeOf(c);
  const leaseId = leaseParam(c);
  // Release completes whatever happens to our caller (SPEC §4): keep it alive past a disconnect.
  const pending = stub.release(scope, leaseId);
  const settled: Promise<unknown> = pending;
  c.executionCtx.waitUntil(settled.then(noop, noop));
  return send(c, await pending);
});

scopeRoutes.get("/watch", async (c) => {
  const { scope, stub } = scopeOf(c);
  const { afterGeneration } = queryParams(c, watchQuerySchema);
  if (isKeyedScope(scope)) throw new ShiftlockError("unsupported", "keyed scopes have no watch");
  if (c.req.header("Upgrade")?.toLowerCase() !== "websocket") {
    throw new ShiftlockError("invalid_request", "watch needs a WebSocket upgrade (Upgrade: websocket)", {
      field: "Upgrade",
    });
  }
  const target = new URL("https://scope.internal/watch");
  target.searchParams.set(SCOPE_WATCH_PARAMS.scope, JSON.stringify(scope));
  if (afterGeneration !== undefined)
    target.searchParams.set(SCOPE_WATCH_PARAMS.afterGeneration, afterGeneration.toString());
  const subprotocol = offeredBearerSubprotocol(c.req.header("Sec-WebSocket-Protocol"));
  if (subprotocol !== undefined) target.searchParams.set(SCOPE_WATCH_PARAMS.subprotocol, subprotocol);
  // Only the upgrade itself travels on; the token stays in the router.
  return stub.fetch(target.toString(), { headers: { Upgrade: "websocket" } });
});

/**
 * The lease id from the path. Not held to the name rules: any id that is not a current
 * lease is simply unknown (410 for keepalive/refresh/publish, 204 for release).
 */
function leaseParam(c: CoordContext): string {
  return c.req.param("leaseId") ?? "";
}

export const coordRoutes = new Hono<AppEnv>();
coordRoutes.route("/:volumeId/stores/:objectStoreId/keys/:key", scopeRoutes);
coordRoutes.route("/:volumeId/stores/:objectStoreId", scopeRoutes);
coordRoutes.route("/:volumeId/keys/:key", scopeRoutes);
