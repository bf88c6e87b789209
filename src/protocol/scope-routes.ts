/**
 * The coord routes of docs/protocol.md#coord, declared once (see route.ts) for each of the three ways to
 * address a scope: object store, key of a volume, key of an object store.
 *
 * Guarantees: the nine operations are declared once and stamped onto each address, so the
 * three families cannot drift; keyed families list `unsupported` where the protocol says keyed
 * scopes lack the operation.
 */
import { z } from "zod";
import {
  acquireBodySchema,
  acquireResponseSchema,
  capabilitySchema,
  coordWatchClientMessageSchema,
  keepaliveBodySchema,
  keepaliveResponseSchema,
  publishBodySchema,
  refreshBodySchema,
  snapshotSchema,
  watchMessageSchema,
  watchQuerySchema,
} from "./coord.ts";
import type { ErrorCode } from "./errors.ts";
import { evictBodySchema } from "./operators.ts";
import type { RouteBody, RouteSpec } from "./route.ts";
import { defineRoute } from "./route.ts";

const STORE = "/v1/ns/{ns}/volumes/{volumeId}/stores/{objectStoreId}";
const VOLUME_KEY = "/v1/ns/{ns}/volumes/{volumeId}/keys/{key}";
const STORE_KEY = "/v1/ns/{ns}/volumes/{volumeId}/stores/{objectStoreId}/keys/{key}";

const noQuery = z.strictObject({});

/** The nine scope operations under `prefix`; `suffix` keeps operation ids unique. */
function scopeRoutes<const P extends string>(prefix: P, suffix: string, keyed: boolean) {
  // Keyed scopes have mutual exclusion only: these operations answer `unsupported` there.
  const unsupported: ErrorCode[] = keyed ? ["unsupported"] : [];
  const lease = `${prefix}/leases/{leaseId}` as const;
  const opaqueParams = ["leaseId"] as const;
  return {
    capability: defineRoute({
      operationId: `capability${suffix}`,
      tag: "coord",
      summary: "What this scope supports",
      method: "GET",
      path: `${prefix}/capability`,
      role: "read",
      query: noQuery,
      status: 200,
      response: capabilitySchema,
      errors: [],
    }),
    snapshot: defineRoute({
      operationId: `snapshot${suffix}`,
      tag: "coord",
      summary: "Current generation and root (root null until published)",
      method: "GET",
      path: `${prefix}/snapshot`,
      role: "read",
      query: noQuery,
      status: 200,
      response: snapshotSchema,
      errors: unsupported,
    }),
    acquire: defineRoute({
      operationId: `acquireWriteLease${suffix}`,
      tag: "coord",
      summary: "Acquire the write lease (try, or wait up to waitMs, first come first served)",
      description:
        "A waiting acquire may carry a caller-chosen waiterId; DELETE …/leases/{waiterId} withdraws it (docs/protocol.md#leaving-a-coord-wait). " +
        "rate_limited: the scope's wait queue is full.",
      method: "POST",
      path: `${prefix}/leases`,
      role: "write",
      body: acquireBodySchema,
      status: 201,
      response: acquireResponseSchema,
      errors: ["lease_held", "rate_limited"],
      // A lost grant is found by the waiter's own waiterId, never by asking again.
      repeatable: "never",
    }),
    keepalive: defineRoute({
      operationId: `keepaliveWriteLease${suffix}`,
      tag: "coord",
      summary: "Extend the lease; wantLock says someone is waiting",
      method: "POST",
      path: `${lease}/keepalive`,
      opaqueParams,
      role: "write",
      body: keepaliveBodySchema,
      status: 200,
      response: keepaliveResponseSchema,
      errors: ["lease_lost"],
      repeatable: "always",
      heartbeat: true,
    }),
    refresh: defineRoute({
      operationId: `refreshWriteLease${suffix}`,
      tag: "coord",
      summary: "Snapshot as seen by the lease holder",
      method: "POST",
      path: `${lease}/refresh`,
      opaqueParams,
      role: "write",
      body: refreshBodySchema,
      status: 200,
      response: snapshotSchema,
      errors: ["lease_lost", ...unsupported],
      repeatable: "always",
    }),
    publish: defineRoute({
      operationId: `publish${suffix}`,
      tag: "coord",
      summary: "Publish a new generation / root (holder only)",
      method: "POST",
      path: `${lease}/publish`,
      opaqueParams,
      role: "write",
      body: publishBodySchema,
      status: 200,
      response: snapshotSchema,
      errors: ["lease_lost", "stale_generation", ...unsupported],
      // A lost answer is resolved by reading the snapshot.
      repeatable: "never",
    }),
    release: defineRoute({
      operationId: `releaseWriteLease${suffix}`,
      tag: "coord",
      summary: "Release the lease or withdraw a wait (idempotent: unknown or expired ids too)",
      method: "DELETE",
      path: lease,
      opaqueParams,
      role: "write",
      status: 204,
      errors: [],
      repeatable: "always",
    }),
    evict: defineRoute({
      operationId: `evictWriteLease${suffix}`,
      tag: "coord",
      summary: "Evict the lease holder (admin)",
      description:
        "The current lease ends as if it expired: the next waiter is granted with the next epoch, the unlocked " +
        "event carries evicted:true and the note, and the evicted holder's next keepalive, refresh or publish " +
        "answers 410 lease_lost. A free scope answers 200 unchanged. Answers the scope's snapshot (a keyed " +
        "scope's has generation 0 and root null).",
      method: "POST",
      path: `${prefix}/evict`,
      role: "admin",
      body: evictBodySchema,
      status: 200,
      response: snapshotSchema,
      errors: [],
    }),
    watch: defineRoute({
      operationId: `watchScope${suffix}`,
      tag: "coord",
      summary: "Watch publishes, wantLock and unlock events over a WebSocket",
      description:
        "The server sends ready, then replays retained publishes after afterGeneration (or one replay event), " +
        "then live events. Subscribers acknowledge with {type:ack,count}; one more than 1,024 events behind is " +
        "closed with code 4008 and resumes with afterGeneration.",
      method: "GET",
      path: `${prefix}/watch`,
      role: "read",
      query: watchQuerySchema,
      status: 101,
      errors: ["rate_limited", ...unsupported],
      websocket: { server: watchMessageSchema, client: coordWatchClientMessageSchema },
    }),
  };
}

/** The scope routes by address family. */
export const SCOPE_ROUTE_FAMILIES = {
  store: scopeRoutes(STORE, "", false),
  volumeKey: scopeRoutes(VOLUME_KEY, "VolumeKey", true),
  storeKey: scopeRoutes(STORE_KEY, "StoreKey", true),
} as const;
export type ScopeFamily = keyof typeof SCOPE_ROUTE_FAMILIES;
export type ScopeRoutes = (typeof SCOPE_ROUTE_FAMILIES)[ScopeFamily];

/** The decoded body of a write-lease acquire (`POST {scope}/leases`), derived from its route. */
export type WriteLeaseAcquireBody = RouteBody<ScopeRoutes["acquire"]>;

export const SCOPE_ROUTES: readonly RouteSpec[] = Object.values(SCOPE_ROUTE_FAMILIES).flatMap((family) =>
  Object.values<RouteSpec>(family),
);
