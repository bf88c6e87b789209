/**
 * The generation routes of docs/protocol.md#generations, declared once (see route.ts).
 */
import { z } from "zod";
import { generationResponseSchema, patchGenerationBodySchema, registerGenerationBodySchema } from "./generations.ts";
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

export const GENERATION_ROUTES = [registerGeneration, getGeneration, updateGeneration] as const;
