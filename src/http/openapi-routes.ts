/**
 * The route registry behind `GET /openapi.json`: one descriptor per route SPEC defines, with
 * the same zod schemas the routes validate with, the success status and every error code
 * the route can answer.
 *
 * Guarantees: every route the Worker serves has a descriptor here (test/worker/openapi.test.ts
 * walks Hono's route table and fails otherwise), and no descriptor names a route that is not
 * served. The codes listed per route are those SPEC assigns to it; the auth, validation, size
 * and internal codes common to every `/v1` route are added by the document builder.
 *
 * Does not: validate anything at runtime (the routes do, with the same schemas).
 */
import { z } from "zod";
import type { ErrorCode } from "../protocol/errors.ts";
import {
  CLAIM_EVENT_REASONS,
  abortBodySchema,
  acquireBodySchema as claimAcquireBodySchema,
  claimRecordWireSchema,
  claimResponseSchema,
  claimWatchQuerySchema,
  commitBodySchema,
  prepareBodySchema,
  releaseBodySchema,
  renewBodySchema,
} from "../protocol/claims.ts";
import {
  acquireBodySchema as leaseAcquireBodySchema,
  acquireResponseSchema,
  capabilityWireSchema,
  keepaliveBodySchema,
  keepaliveResponseSchema,
  publishBodySchema,
  refreshBodySchema,
  snapshotWireSchema,
  watchAckSchema,
  watchMessageSchema,
  watchQuerySchema,
} from "../protocol/coord.ts";
import { counterOut } from "../protocol/counter.ts";
import { epochMsSchema } from "../protocol/fields.ts";
import {
  generationResponseSchema,
  patchGenerationBodySchema,
  registerGenerationBodySchema,
} from "../protocol/generations.ts";

/** Who may call a route: nobody needs a token, or the `read` / `write` role. */
export type RouteAuth = "none" | "read" | "write";

/** One route of the API, as the OpenAPI document describes it. */
export interface RouteDescriptor {
  method: "get" | "post" | "patch" | "delete";
  /** OpenAPI path template, e.g. `/v1/ns/{ns}/claims/{claim}`. Every `{param}` is a name. */
  path: string;
  operationId: string;
  tag: "meta" | "claims" | "generations" | "coord";
  summary: string;
  description?: string;
  auth: RouteAuth;
  query?: z.ZodObject;
  body?: z.ZodType;
  /** 101 = WebSocket upgrade. */
  status: 200 | 201 | 204 | 101;
  response?: z.ZodType;
  /** Route-specific codes (SPEC §3/§4), beyond the common ones. */
  errors: ErrorCode[];
  /** For WebSocket routes: what the server sends and what the client may send. */
  websocket?: { server: z.ZodType; client: z.ZodType };
}

// Claims watch messages are plain TS types in protocol/claims.ts; these schemas document them.
const claimSnapshotMessage = z.strictObject({
  type: z.literal("snapshot"),
  claim: claimRecordWireSchema.nullable(),
  truncated: z.literal(true).optional().describe("history no longer reaches afterVersion"),
});
const claimEventMessage = z.strictObject({
  type: z.literal("event"),
  reason: z.enum(CLAIM_EVENT_REASONS),
  claim: claimRecordWireSchema,
  timeMs: epochMsSchema,
});
const pongMessage = z.strictObject({ type: z.literal("pong") });
const pingMessage = z.strictObject({ type: z.literal("ping") });
const claimWatchServerMessage = z.discriminatedUnion("type", [claimSnapshotMessage, claimEventMessage, pongMessage]);
const claimWatchClientMessage = z.discriminatedUnion("type", [
  pingMessage,
  z.strictObject({ type: z.literal("ack"), version: counterOut.describe("last event version processed") }),
]);
const coordWatchClientMessage = z.discriminatedUnion("type", [pingMessage, watchAckSchema]);

const healthSchema = z.strictObject({ ok: z.literal(true) });

const CLAIM = "/v1/ns/{ns}/claims/{claim}";
const OPERATION_ID = "operation_id_conflict" as const;

function claimMutation(
  verb: string,
  operationId: string,
  summary: string,
  body: z.ZodType,
  errors: ErrorCode[],
): RouteDescriptor {
  return {
    method: "post",
    path: `${CLAIM}/${verb}`,
    operationId,
    tag: "claims",
    summary,
    auth: "write",
    body,
    status: 200,
    response: claimResponseSchema,
    errors: [...errors, OPERATION_ID],
  };
}

const claimRoutes: RouteDescriptor[] = [
  claimMutation(
    "acquire",
    "acquireClaim",
    "Acquire a claim (or extend the caller's own hold)",
    claimAcquireBodySchema,
    ["claim_held", "token_overflow"],
  ),
  claimMutation("renew", "renewClaim", "Renew the caller's hold", renewBodySchema, [
    "claim_not_found",
    "not_owner",
    "stale_token",
  ]),
  claimMutation("transfer/prepare", "prepareTransfer", "Reserve the claim for a successor", prepareBodySchema, [
    "claim_not_found",
    "not_owner",
    "stale_token",
    "concurrent_transfer",
  ]),
  claimMutation("transfer/commit", "commitTransfer", "Hand the claim to the successor (token+1)", commitBodySchema, [
    "claim_not_found",
    "no_transfer",
    "concurrent_transfer",
    "stale_token",
    "token_overflow",
  ]),
  claimMutation("transfer/abort", "abortTransfer", "Cancel a prepared transfer", abortBodySchema, [
    "claim_not_found",
    "no_transfer",
    "stale_token",
    "not_owner",
  ]),
  claimMutation("release", "releaseClaim", "Release the caller's hold", releaseBodySchema, [
    "claim_not_found",
    "stale_token",
    "not_owner",
  ]),
  {
    method: "get",
    path: CLAIM,
    operationId: "getClaim",
    tag: "claims",
    summary: "Read a claim (never creates it)",
    auth: "read",
    status: 200,
    response: claimResponseSchema,
    errors: ["claim_not_found"],
  },
  {
    method: "get",
    path: `${CLAIM}/watch`,
    operationId: "watchClaim",
    tag: "claims",
    summary: "Watch a claim over a WebSocket",
    description:
      "Without afterVersion the first message is a snapshot; with it, retained events after that version are " +
      "replayed (or a truncated snapshot is sent). Slow subscribers are closed with code 4008.",
    auth: "read",
    query: claimWatchQuerySchema,
    status: 101,
    errors: ["rate_limited"],
    websocket: { server: claimWatchServerMessage, client: claimWatchClientMessage },
  },
];

const generationRoutes: RouteDescriptor[] = [
  {
    method: "post",
    path: "/v1/ns/{ns}/generations",
    operationId: "registerGeneration",
    tag: "generations",
    summary: "Register a generation in state joining",
    description:
      "Idempotent: the same id, service and instanceId again answers 200 with the current record, unchanged. " +
      "200 on creation too (SPEC names no 201 for this route).",
    auth: "write",
    body: registerGenerationBodySchema,
    status: 200,
    response: generationResponseSchema,
    errors: ["generation_exists"],
  },
  {
    method: "get",
    path: "/v1/ns/{ns}/generations/{id}",
    operationId: "getGeneration",
    tag: "generations",
    summary: "Read a generation (never creates it)",
    auth: "read",
    status: 200,
    response: generationResponseSchema,
    errors: ["generation_not_found"],
  },
  {
    method: "patch",
    path: "/v1/ns/{ns}/generations/{id}",
    operationId: "updateGeneration",
    tag: "generations",
    summary: "Move a generation to another state",
    description:
      "Legal moves follow SPEC §3; retired and failed are final. The same state only updates reason and time.",
    auth: "write",
    body: patchGenerationBodySchema,
    status: 200,
    response: generationResponseSchema,
    errors: ["generation_not_found", "invalid_state"],
  },
];

/** The three ways to address a coord scope (SPEC §4). */
const SCOPES = [
  { prefix: "/v1/ns/{ns}/volumes/{volumeId}/stores/{objectStoreId}", suffix: "", keyed: false },
  { prefix: "/v1/ns/{ns}/volumes/{volumeId}/keys/{key}", suffix: "VolumeKey", keyed: true },
  { prefix: "/v1/ns/{ns}/volumes/{volumeId}/stores/{objectStoreId}/keys/{key}", suffix: "StoreKey", keyed: true },
] as const;

function coordRoutesFor(prefix: string, suffix: string, keyed: boolean): RouteDescriptor[] {
  // Keyed scopes have mutual exclusion only: these routes answer `unsupported` there.
  const unsupported: ErrorCode[] = keyed ? ["unsupported"] : [];
  const lease = `${prefix}/leases/{leaseId}`;
  const route = (r: Omit<RouteDescriptor, "tag">): RouteDescriptor => ({
    ...r,
    tag: "coord",
    operationId: `${r.operationId}${suffix}`,
  });
  return [
    route({
      method: "get",
      path: `${prefix}/capability`,
      operationId: "capability",
      summary: "What this scope supports",
      auth: "read",
      status: 200,
      response: capabilityWireSchema,
      errors: [],
    }),
    route({
      method: "get",
      path: `${prefix}/snapshot`,
      operationId: "snapshot",
      summary: "Current generation and root (root null until published)",
      auth: "read",
      status: 200,
      response: snapshotWireSchema,
      errors: unsupported,
    }),
    route({
      method: "post",
      path: `${prefix}/leases`,
      operationId: "acquireWriteLease",
      summary: "Acquire the write lease (try, or wait up to waitMs, first come first served)",
      auth: "write",
      body: leaseAcquireBodySchema,
      status: 201,
      response: acquireResponseSchema,
      // rate_limited: the scope's wait queue is full (waitMs > 0).
      errors: ["lease_held", "rate_limited"],
    }),
    route({
      method: "post",
      path: `${lease}/keepalive`,
      operationId: "keepaliveWriteLease",
      summary: "Extend the lease; wantLock says someone is waiting",
      auth: "write",
      body: keepaliveBodySchema,
      status: 200,
      response: keepaliveResponseSchema,
      errors: ["lease_lost"],
    }),
    route({
      method: "post",
      path: `${lease}/refresh`,
      operationId: "refreshWriteLease",
      summary: "Snapshot as seen by the lease holder",
      auth: "write",
      body: refreshBodySchema,
      status: 200,
      response: snapshotWireSchema,
      errors: ["lease_lost", ...unsupported],
    }),
    route({
      method: "post",
      path: `${lease}/publish`,
      operationId: "publish",
      summary: "Publish a new generation / root (holder only)",
      auth: "write",
      body: publishBodySchema,
      status: 200,
      response: snapshotWireSchema,
      errors: ["lease_lost", "stale_generation", ...unsupported],
    }),
    route({
      method: "delete",
      path: lease,
      operationId: "releaseWriteLease",
      summary: "Release the lease (idempotent: unknown or expired leases too)",
      auth: "write",
      status: 204,
      errors: [],
    }),
    route({
      method: "get",
      path: `${prefix}/watch`,
      operationId: "watchScope",
      summary: "Watch publishes, wantLock and unlock events over a WebSocket",
      description:
        "The server sends ready, then replays retained publishes after afterGeneration (or one replay event), " +
        "then live events. Slow subscribers are closed with code 4008.",
      auth: "read",
      query: watchQuerySchema,
      status: 101,
      errors: ["rate_limited", ...unsupported],
      websocket: { server: watchMessageSchema, client: coordWatchClientMessage },
    }),
  ];
}

/** Every route of SPEC, in document order. */
export const ROUTES: readonly RouteDescriptor[] = [
  {
    method: "get",
    path: "/healthz",
    operationId: "health",
    tag: "meta",
    summary: "Liveness (no auth)",
    auth: "none",
    status: 200,
    response: healthSchema,
    errors: [],
  },
  {
    method: "get",
    path: "/openapi.json",
    operationId: "openapi",
    tag: "meta",
    summary: "This document (no auth)",
    auth: "none",
    status: 200,
    errors: [],
  },
  ...claimRoutes,
  ...generationRoutes,
  ...SCOPES.flatMap((s) => coordRoutesFor(s.prefix, s.suffix, s.keyed)),
];
