/**
 * Coord routes (docs/protocol.md#coord): the declared routes of protocol/scope-routes.ts, for each of the
 * three scope addresses, mounted on the scope's Durable Object.
 *
 * Each scope is its own Durable Object named `objectName(ns, "scope", volumeId,
 * objectStoreId or "", key or "")`: names are ≥ 1 byte, so "" never collides with a real id,
 * and the JSON-array name is injective.
 *
 * Guarantees: inputs arrive validated and decoded (mount.ts); keyed scopes refuse watch here
 * and snapshot/refresh/publish in the machine (`unsupported`); a waiting acquire whose
 * client disconnects is cancelled in the object (via `Request.signal`, compatibility flag
 * `enable_request_signal`), which also gives back a grant that could no longer be
 * delivered; a release completes even if its caller goes away.
 *
 * Does not: authenticate (app.ts) or decide anything (the object does).
 */
import type { Hono } from "hono";
import type { ScopeObject } from "../coord/scope-object.ts";
import { SCOPE_WATCH_PARAMS } from "../coord/scope-object.ts";
import { DEFAULT_LEASE_TTL_MS, type ScopeId, isKeyedScope } from "../protocol/coord.ts";
import { ShiftlockError } from "../protocol/errors.ts";
import { SCOPE_ROUTE_FAMILIES } from "../protocol/scope-routes.ts";
import type { ScopeRoutes } from "../protocol/scope-routes.ts";
import type { AppEnv } from "./app-env.ts";
import type { AppContext } from "./mount.ts";
import { forwardWatch, mount } from "./mount.ts";
import { objectName } from "../durable/object-names.ts";

const noop = (): void => undefined;

/** The path parameters that identify a scope (absent ones are "" in the identity). */
interface ScopeParams {
  ns: string;
  volumeId: string;
  objectStoreId?: string;
  key?: string;
}

/** The scope named by validated path parameters, and its object. */
function scopeOf(c: AppContext, params: ScopeParams): { scope: ScopeId; stub: DurableObjectStub<ScopeObject> } {
  const scope = { volumeId: params.volumeId, objectStoreId: params.objectStoreId ?? "", key: params.key ?? "" };
  const name = objectName(params.ns, "scope", scope.volumeId, scope.objectStoreId, scope.key);
  return { scope, stub: c.env.SCOPES.getByName(name) };
}

function mountFamily(app: Hono<AppEnv>, routes: ScopeRoutes): void {
  mount(app, routes.capability, (c, { params }) => {
    const { scope, stub } = scopeOf(c, params);
    return stub.capability(scope);
  });
  mount(app, routes.snapshot, (c, { params }) => {
    const { scope, stub } = scopeOf(c, params);
    return stub.snapshot(scope);
  });
  mount(app, routes.acquire, async (c, { params, body }) => {
    const { scope, stub } = scopeOf(c, params);
    const waitMs = body.waitMs ?? 0;
    const waiterId = body.waiterId ?? crypto.randomUUID();
    const request = { participantId: body.participantId, ttlMs: body.ttlMs ?? DEFAULT_LEASE_TTL_MS, waitMs, waiterId };
    if (waitMs === 0) return stub.acquire(scope, request);
    // The object holds a waiting request open. If our client goes away, tell the object so
    // the waiter leaves the queue (or its undeliverable grant is released at once).
    const signal = c.req.raw.signal;
    const onAbort = (): void => {
      const cancelled: Promise<unknown> = stub.cancelWait(scope, waiterId);
      c.executionCtx.waitUntil(cancelled.then(noop, noop));
    };
    signal.addEventListener("abort", onAbort, { once: true });
    try {
      return await stub.acquire(scope, request);
    } finally {
      signal.removeEventListener("abort", onAbort);
    }
  });
  mount(app, routes.keepalive, (c, { params, body }) => {
    const { scope, stub } = scopeOf(c, params);
    return stub.keepalive(scope, params.leaseId, body.ttlMs);
  });
  mount(app, routes.refresh, (c, { params }) => {
    const { scope, stub } = scopeOf(c, params);
    return stub.refresh(scope, params.leaseId);
  });
  mount(app, routes.publish, (c, { params, body }) => {
    const { scope, stub } = scopeOf(c, params);
    return stub.publish(scope, params.leaseId, body);
  });
  mount(app, routes.release, (c, { params }) => {
    const { scope, stub } = scopeOf(c, params);
    // Release completes whatever happens to our caller (docs/protocol.md#coord): keep it alive past a disconnect.
    const pending = stub.release(scope, params.leaseId);
    const settled: Promise<unknown> = pending;
    c.executionCtx.waitUntil(settled.then(noop, noop));
    return pending;
  });
  mount(app, routes.evict, (c, { params, body }) => {
    const { scope, stub } = scopeOf(c, params);
    return stub.evict(scope, body.note);
  });
  mount(app, routes.watch, (c, { params, query }) => {
    const { scope, stub } = scopeOf(c, params);
    if (isKeyedScope(scope)) throw new ShiftlockError("unsupported", "keyed scopes have no watch");
    const internal: Record<string, string> = { [SCOPE_WATCH_PARAMS.scope]: JSON.stringify(scope) };
    if (query.afterGeneration !== undefined)
      internal[SCOPE_WATCH_PARAMS.afterGeneration] = query.afterGeneration.toString();
    return forwardWatch(c, stub, internal);
  });
}

export function mountCoordRoutes(app: Hono<AppEnv>): void {
  for (const family of Object.values(SCOPE_ROUTE_FAMILIES)) mountFamily(app, family);
}
