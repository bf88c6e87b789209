/**
 * The generation routes of docs/protocol.md#generations and the generation's lease
 * (docs/protocol.md#sessions), declared once (see route.ts).
 */
import { z } from "zod";
import {
  endLeaseBodySchema,
  generationResponseSchema,
  keepaliveBodySchema,
  leaseChannelClientMessageSchema,
  leaseChannelQuerySchema,
  leaseChannelServerMessageSchema,
  patchGenerationBodySchema,
  registerGenerationBodySchema,
} from "./generations.ts";
import { defineRoute } from "./route.ts";

export const registerGeneration = defineRoute({
  operationId: "registerGeneration",
  tag: "generations",
  summary: "Register a generation in state joining",
  description:
    "Idempotent: the same id, service and instanceId again answers 200 with the current record, unchanged. " +
    "200 on creation too (the protocol names no 201 for this route).",
  method: "POST",
  path: "/v1/ns/{ns}/generations",
  role: "write",
  body: registerGenerationBodySchema,
  status: 200,
  response: generationResponseSchema,
  errors: ["generation_exists"],
  repeatable: "always",
});

export const getGeneration = defineRoute({
  operationId: "getGeneration",
  tag: "generations",
  summary: "Read a generation (never creates it)",
  method: "GET",
  path: "/v1/ns/{ns}/generations/{id}",
  role: "read",
  query: z.strictObject({}),
  status: 200,
  response: generationResponseSchema,
  errors: ["generation_not_found"],
});

export const updateGeneration = defineRoute({
  operationId: "updateGeneration",
  tag: "generations",
  summary: "Move a generation to another state",
  description:
    "Legal moves follow docs/protocol.md#generations; retired and failed are final. The same state only updates reason and time.",
  method: "PATCH",
  path: "/v1/ns/{ns}/generations/{id}",
  role: "write",
  body: patchGenerationBodySchema,
  status: 200,
  response: generationResponseSchema,
  errors: ["generation_not_found", "invalid_state"],
  // Moving to the state it is already in only updates reason and time.
  repeatable: "always",
});

export const keepaliveGeneration = defineRoute({
  operationId: "keepaliveGeneration",
  tag: "generations",
  summary: "Start the generation's lease, or extend it to at least now + ttlMs",
  description:
    "The first keepalive, or one after the lease expired or ended, starts a lease with the next leaseEpoch " +
    "(binding nothing the previous epoch held); later ones extend leaseExpiresAtMs, never shorten it. A " +
    "keepalive touches no claim and no listing entry. retired and failed generations answer invalid_state.",
  method: "POST",
  path: "/v1/ns/{ns}/generations/{id}/keepalive",
  role: "write",
  body: keepaliveBodySchema,
  status: 200,
  response: generationResponseSchema,
  errors: ["generation_not_found", "invalid_state", "operation_id_conflict"],
  repeatable: "always",
  heartbeat: true,
});

export const endGenerationLease = defineRoute({
  operationId: "endGenerationLease",
  tag: "generations",
  summary: "End the generation's lease now (its bound claims expire)",
  description:
    "As if the lease expired: every claim bound to it expires with reason expired, and the lease channel hears " +
    "ended. A generation without a live lease answers 200 unchanged.",
  method: "POST",
  path: "/v1/ns/{ns}/generations/{id}/lease/end",
  role: "write",
  body: endLeaseBodySchema,
  status: 200,
  response: generationResponseSchema,
  errors: ["generation_not_found", "operation_id_conflict"],
  repeatable: "always",
});

export const generationLeaseChannel = defineRoute({
  operationId: "generationLeaseChannel",
  tag: "generations",
  summary: "Keep the generation's lease over a WebSocket",
  description:
    "Opening the channel is a keepalive with ttlMs; each {type:ping} is one more (answered {type:pong} by the " +
    "platform without waking the object). The first message is {type:generation}; {type:lease} tells a moved " +
    "deadline, {type:ended} the lease's end (then the server closes). Closing the channel ends nothing: the " +
    "lease runs to its deadline.",
  method: "GET",
  path: "/v1/ns/{ns}/generations/{id}/lease",
  role: "write",
  query: leaseChannelQuerySchema,
  status: 101,
  errors: ["generation_not_found", "invalid_state", "rate_limited"],
  websocket: { server: leaseChannelServerMessageSchema, client: leaseChannelClientMessageSchema },
});

export const GENERATION_ROUTES = [
  registerGeneration,
  getGeneration,
  updateGeneration,
  keepaliveGeneration,
  endGenerationLease,
  generationLeaseChannel,
] as const;
