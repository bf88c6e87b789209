/**
 * The listing and stats routes of docs/protocol.md#listing and docs/operations.md, declared once (see
 * route.ts): the router, `/openapi.json` and the client derive from these.
 */
import { z } from "zod";
import {
  claimPageSchema,
  generationPageSchema,
  listClaimsQuerySchema,
  listGenerationsQuerySchema,
  listScopesQuerySchema,
  scopePageSchema,
  statsSchema,
} from "./listing.ts";
import { defineRoute } from "./route.ts";

const LAG =
  "From the namespace index, which may lag the objects by up to 2 s; a GET of one object is exact. " +
  "Name order is by the bytes of the UTF-8 form; pass the answer's cursor for the next page (null: last page).";

export const listClaims = defineRoute({
  operationId: "listClaims",
  tag: "listing",
  summary: "List the namespace's claims (prefix, phase, owner filters)",
  description: LAG,
  method: "GET",
  path: "/v1/ns/{ns}/claims",
  role: "read",
  query: listClaimsQuerySchema,
  status: 200,
  response: claimPageSchema,
  errors: [],
});

export const listGenerations = defineRoute({
  operationId: "listGenerations",
  tag: "listing",
  summary: "List the namespace's generations (service, state filters)",
  description: LAG,
  method: "GET",
  path: "/v1/ns/{ns}/generations",
  role: "read",
  query: listGenerationsQuerySchema,
  status: 200,
  response: generationPageSchema,
  errors: [],
});

export const listScopes = defineRoute({
  operationId: "listScopes",
  tag: "listing",
  summary: "List the namespace's coord scopes (volumeId filter)",
  description: `${LAG} Scopes are ordered by volumeId, then objectStoreId, then key ("" first).`,
  method: "GET",
  path: "/v1/ns/{ns}/scopes",
  role: "read",
  query: listScopesQuerySchema,
  status: 200,
  response: scopePageSchema,
  errors: [],
});

export const namespaceStats = defineRoute({
  operationId: "namespaceStats",
  tag: "listing",
  summary: "Counters of the last minute and hour, and claims per phase",
  description:
    "Counters (acquires, refusals by code, expiries, transfers, watchers connected, 4008 closes) as the " +
    "namespace's objects delivered them to the index (up to 2 s late); claims per phase from the index.",
  method: "GET",
  path: "/v1/ns/{ns}/stats",
  role: "read",
  query: z.strictObject({}),
  status: 200,
  response: statsSchema,
  errors: [],
});

export const LISTING_ROUTES = [listClaims, listGenerations, listScopes, namespaceStats] as const;
