/**
 * Every route of the API, in document order: the list the router mounts, `/openapi.json`
 * describes and the tests walk.
 */
import { z } from "zod";
import { CLAIM_ROUTES } from "./claim-routes.ts";
import { GENERATION_ROUTES } from "./generation-routes.ts";
import { LISTING_ROUTES } from "./listing-routes.ts";
import { whoamiResponseSchema } from "./operators.ts";
import type { RouteSpec } from "./route.ts";
import { defineRoute } from "./route.ts";
import { SCOPE_ROUTES } from "./scope-routes.ts";
import { WATCH_TICKET_ROUTES } from "./watch-ticket-routes.ts";

export const health = defineRoute({
  operationId: "health",
  tag: "meta",
  summary: "Liveness (no auth)",
  method: "GET",
  path: "/healthz",
  role: "none",
  status: 200,
  response: z.strictObject({ ok: z.literal(true) }),
  errors: [],
});

export const openApi = defineRoute({
  operationId: "openapi",
  tag: "meta",
  summary: "This document (no auth)",
  method: "GET",
  path: "/openapi.json",
  role: "none",
  status: 200,
  errors: [],
});

export const whoami = defineRoute({
  operationId: "whoami",
  tag: "meta",
  summary: "The calling token's name and role",
  method: "GET",
  path: "/v1/ns/{ns}/whoami",
  role: "read",
  query: z.strictObject({}),
  status: 200,
  response: whoamiResponseSchema,
  errors: [],
});

export const ROUTES: readonly RouteSpec[] = [
  health,
  openApi,
  whoami,
  ...CLAIM_ROUTES,
  ...GENERATION_ROUTES,
  ...SCOPE_ROUTES,
  ...LISTING_ROUTES,
  ...WATCH_TICKET_ROUTES,
];
