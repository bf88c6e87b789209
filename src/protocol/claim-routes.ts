/**
 * The claim routes of docs/protocol.md#claims, declared once (see route.ts): the router, `/openapi.json` and
 * the client all derive from these.
 */
import { z } from "zod";
import {
  abortBodySchema,
  acquireBodySchema,
  batchBodySchema,
  batchResponseSchema,
  claimResponseSchema,
  claimWatchClientMessageSchema,
  claimWatchQuerySchema,
  claimWatchServerMessageSchema,
  commitBodySchema,
  prepareBodySchema,
  releaseBodySchema,
  renewBodySchema,
} from "./claims.ts";
import type { BatchOpName } from "./claims.ts";
import type { ErrorCode } from "./errors.ts";
import { evictBodySchema } from "./operators.ts";
import { defineRoute, type RouteBody } from "./route.ts";

const CLAIM = "/v1/ns/{ns}/claims/{claim}";

/** A claim mutation: POST, write role, `{"claim": …}`, and operation-id replay. */
function mutation<const V extends string, const B extends z.ZodType, const E extends readonly ErrorCode[]>(
  verb: V,
  operationId: string,
  summary: string,
  body: B,
  errors: E,
  heartbeat?: true,
) {
  return defineRoute({
    ...(heartbeat === undefined ? {} : { heartbeat }),
    operationId,
    tag: "claims",
    summary,
    method: "POST",
    path: `${CLAIM}/${verb}` as const,
    role: "write",
    body,
    status: 200,
    response: claimResponseSchema,
    errors: [...errors, "operation_id_conflict"],
    repeatable: "withOperationId",
  });
}

export const acquireClaim = mutation(
  "acquire",
  "acquireClaim",
  "Acquire a claim (or extend the caller's own hold)",
  acquireBodySchema,
  ["claim_held", "token_overflow"],
);
export const renewClaim = mutation(
  "renew",
  "renewClaim",
  "Renew the caller's hold",
  renewBodySchema,
  ["claim_not_found", "evicted", "not_owner", "stale_token"],
  true,
);
export const prepareTransfer = mutation(
  "transfer/prepare",
  "prepareTransfer",
  "Reserve the claim for a successor",
  prepareBodySchema,
  ["claim_not_found", "evicted", "not_owner", "stale_token", "concurrent_transfer"],
);
export const commitTransfer = mutation(
  "transfer/commit",
  "commitTransfer",
  "Hand the claim to the successor (token+1)",
  commitBodySchema,
  ["claim_not_found", "evicted", "no_transfer", "concurrent_transfer", "stale_token", "token_overflow"],
);
export const abortTransfer = mutation(
  "transfer/abort",
  "abortTransfer",
  "Cancel a prepared transfer",
  abortBodySchema,
  ["claim_not_found", "evicted", "no_transfer", "stale_token", "not_owner"],
);
export const releaseClaim = mutation("release", "releaseClaim", "Release the caller's hold", releaseBodySchema, [
  "claim_not_found",
  "evicted",
  "stale_token",
  "not_owner",
]);

export const getClaim = defineRoute({
  operationId: "getClaim",
  tag: "claims",
  summary: "Read a claim (never creates it)",
  method: "GET",
  path: CLAIM,
  role: "read",
  query: z.strictObject({}),
  status: 200,
  response: claimResponseSchema,
  errors: ["claim_not_found"],
});

export const watchClaim = defineRoute({
  operationId: "watchClaim",
  tag: "claims",
  summary: "Watch a claim over a WebSocket",
  description:
    "Without afterVersion the first message is a snapshot; with it, retained events after that version are " +
    "replayed (or a truncated snapshot is sent). Subscribers acknowledge with {type:ack,version}; one more " +
    "than 1,024 events behind is closed with code 4008 and resumes with afterVersion.",
  method: "GET",
  path: `${CLAIM}/watch`,
  role: "read",
  query: claimWatchQuerySchema,
  status: 101,
  errors: ["rate_limited"],
  websocket: { server: claimWatchServerMessageSchema, client: claimWatchClientMessageSchema },
});

export const evictClaim = defineRoute({
  operationId: "evictClaim",
  tag: "claims",
  summary: "Evict the claim's owner (admin)",
  description:
    "The claim becomes unowned with reason evicted (previousOwner = the evicted owner, any pending transfer " +
    "dropped); watchers get an evicted event with the note. Until the next acquire, which gets a greater token, " +
    "renew, release, prepare, commit and abort presenting the evicted owner's token answer 409 evicted. An " +
    "unowned claim answers 200 unchanged.",
  method: "POST",
  path: `${CLAIM}/evict`,
  role: "admin",
  body: evictBodySchema,
  status: 200,
  response: claimResponseSchema,
  errors: ["claim_not_found"],
});

/** The claim mutations by the name the object and the batch route use. */
export const CLAIM_MUTATIONS = {
  acquire: acquireClaim,
  renew: renewClaim,
  prepare: prepareTransfer,
  commit: commitTransfer,
  abort: abortTransfer,
  release: releaseClaim,
} as const;
export type ClaimMutationName = keyof typeof CLAIM_MUTATIONS;

/**
 * The decoded body of each claim mutation, by its op name: the route's own body schema, so
 * the client's requests and the machine's commands (core/claim-command.ts) follow a field
 * added there.
 */
export type ClaimBodies = { [K in ClaimMutationName]: RouteBody<(typeof CLAIM_MUTATIONS)[K]> };

/** A decoded claim mutation as the router hands it to the claim's object. */
export type ClaimRequest = { [K in ClaimMutationName]: { op: K; body: ClaimBodies[K] } }[ClaimMutationName];

/**
 * A mutation's path below its claim (`transfer/prepare`): the spelling stored in
 * operation-id fingerprints, so it must not change.
 */
export function claimRoutePath(op: ClaimMutationName): string {
  return CLAIM_MUTATIONS[op].path.slice(CLAIM.length + 1);
}
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
/** Batch op names are exactly the mutation names: this line fails to compile otherwise. */
export const BATCH_OPS_ARE_MUTATIONS: Same<BatchOpName, ClaimMutationName> = true;

/** The batch op name of each mutation is its key in {@link CLAIM_MUTATIONS}. */
export const claimBatch = defineRoute({
  operationId: "claimBatch",
  tag: "claims",
  summary: "Run up to 128 claim mutations at once (independent, concurrent)",
  description:
    "Each op is {op, claim, ...the single route's body}; op is acquire, renew, release, prepare, commit or " +
    "abort, and each claim appears at most once. Ops are independent (not atomic) and keep their own " +
    "operationId semantics. results[i] is exactly the status and body the single route would have answered " +
    "for ops[i] (200 with {claim} or the error envelope with its status). The whole request fails only for " +
    "what fails every op: authentication, authorization, or a malformed batch (400).",
  method: "POST",
  path: "/v1/ns/{ns}/batch",
  role: "write",
  body: batchBodySchema,
  status: 200,
  response: batchResponseSchema,
  errors: [],
  // Each op keeps its own operation-id replay: the batch repeats safely when every op has one.
  repeatable: "withOperationId",
});

export const CLAIM_ROUTES = [...Object.values(CLAIM_MUTATIONS), getClaim, watchClaim, evictClaim, claimBatch] as const;
