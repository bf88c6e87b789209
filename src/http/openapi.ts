/**
 * `GET /openapi.json`: the OpenAPI 3.1 document, generated from the route declarations
 * (protocol/routes.ts) and the very zod schemas the router validates with and the client
 * decodes with.
 *
 * Guarantees:
 * - Every schema is shown in its wire form (the codecs' input side: counters as canonical
 *   decimal strings); request bodies reject unknown fields, answers may grow new ones.
 * - Every `/v1` operation declares the bearer scheme, its role (`x-shiftlock-role`), its
 *   success status and every error status it can answer, each with the envelope narrowed
 *   to that status's codes (`routeErrorCodes`: the route's own codes plus the common ones).
 * - WebSocket routes are GETs answering 101, with the message schemas in `x-websocket`.
 * - The document is built once per isolate and is plain JSON.
 *
 * Does not: describe the 404 `not_found` of unknown routes per operation (it is in the
 * `Error` schema and the document's description), or claim more than the protocol guarantees.
 */
import { z } from "zod";
import { ERROR_STATUS } from "../protocol/errors.ts";
import type { ErrorCode } from "../protocol/errors.ts";
import { claimRecordSchema, claimResponseSchema } from "../protocol/claims.ts";
import {
  acquireResponseSchema,
  capabilitySchema,
  eventMessageSchema,
  keepaliveResponseSchema,
  leaseSchema,
  snapshotSchema,
} from "../protocol/coord.ts";
import { COUNTER_PATTERN, counterSchema } from "../protocol/counter.ts";
import { generationRecordSchema, generationResponseSchema } from "../protocol/generations.ts";
import { NAME_MAX_BYTES, nameSchema } from "../protocol/names.ts";
import type { RouteSpec } from "../protocol/route.ts";
import { pathParamNames, routeErrorCodes, routeRepeatable } from "../protocol/route.ts";
import { ROUTES } from "../protocol/routes.ts";
import { WATCH_TICKET_PARAM } from "../protocol/watch-ticket-routes.ts";
import { BEARER_SUBPROTOCOL_PREFIX } from "./auth.ts";
import { BODY_LIMIT_BYTES } from "./body.ts";
import pkg from "../../package.json" with { type: "json" };

type Json = Record<string, unknown>;

/** Names for schemas shared by several operations (the rest are named after their operation). */
const SHARED_NAMES = new Map<z.ZodType, string>([
  [claimRecordSchema, "ClaimRecord"],
  [claimResponseSchema, "ClaimResponse"],
  [generationRecordSchema, "GenerationRecord"],
  [generationResponseSchema, "GenerationResponse"],
  [leaseSchema, "Lease"],
  [acquireResponseSchema, "LeaseResponse"],
  [keepaliveResponseSchema, "KeepaliveResponse"],
  [snapshotSchema, "Snapshot"],
  [capabilitySchema, "Capability"],
  [eventMessageSchema, "CoordEvent"],
]);

const NAME_DESCRIPTION = `name: 1..${NAME_MAX_BYTES} bytes of UTF-8, no control characters`;
const COUNTER_DESCRIPTION = "64-bit counter as a canonical decimal string (no sign, no leading zeros, below 2^64)";

/** Put what zod cannot express (byte-length names, canonical counters) into the JSON Schema. */
function override(ctx: { zodSchema: unknown; jsonSchema: Json }): void {
  if (ctx.zodSchema === nameSchema) {
    Object.assign(ctx.jsonSchema, { minLength: 1, maxLength: NAME_MAX_BYTES, description: NAME_DESCRIPTION });
  } else if (ctx.zodSchema === counterSchema) {
    Object.assign(ctx.jsonSchema, { type: "string", pattern: COUNTER_PATTERN, description: COUNTER_DESCRIPTION });
  }
}

/**
 * Collects schemas under unique component names and converts them together, so shared
 * schemas become `$ref`s. Everything is converted in its wire form (`io: "input"`).
 */
class SchemaSet {
  private readonly registry = z.registry<{ id: string }>();
  private readonly ids = new Map<z.ZodType, string>();

  constructor() {
    for (const [schema, id] of SHARED_NAMES) this.name(schema, id);
  }

  /** Register `schema` (once) and return its `$ref`. */
  ref(schema: z.ZodType, fallbackName: string): Json {
    return { $ref: `#/components/schemas/${this.name(schema, fallbackName)}` };
  }

  private name(schema: z.ZodType, id: string): string {
    const known = this.ids.get(schema);
    if (known !== undefined) return known;
    this.ids.set(schema, id);
    this.registry.add(schema, { id });
    return id;
  }

  /** The converted schemas, keyed by component name. */
  build(): Record<string, Json> {
    const { schemas } = z.toJSONSchema(this.registry, {
      io: "input",
      unrepresentable: "any",
      target: "draft-2020-12",
      uri: (id) => `#/components/schemas/${id}`,
      override,
    });
    const out: Record<string, Json> = {};
    for (const [id, schema] of Object.entries(schemas)) {
      const { $schema: _drop, $id: _id, ...rest } = schema as Json;
      out[id] = rest;
    }
    return out;
  }
}

/** Inline JSON Schema (wire form) of one schema: a query or path value, or a test's sample body. */
export function inlineSchema(schema: z.ZodType): Json {
  const { $schema: _drop, ...rest } = z.toJSONSchema(schema, {
    io: "input",
    unrepresentable: "any",
    target: "draft-2020-12",
    override,
  }) as Json;
  return rest;
}

const ERROR_SCHEMA: Json = {
  type: "object",
  required: ["error"],
  properties: {
    error: {
      type: "object",
      required: ["code", "message"],
      properties: {
        code: { type: "string", enum: Object.keys(ERROR_STATUS) },
        message: { type: "string", description: "human text; do not parse" },
        field: { type: "string", description: "invalid_request: the offending field or parameter" },
        claim: { $ref: "#/components/schemas/ClaimRecord", description: "claim_held: the holder's record" },
        generation: {
          $ref: "#/components/schemas/GenerationRecord",
          description: "generation_exists: the registered record",
        },
        from: { type: "string", description: "invalid_state: the current state" },
        to: { type: "string", description: "invalid_state: the refused target state" },
        retryAfterMs: { type: "integer", description: "rate_limited: when to retry (also the Retry-After header)" },
      },
      additionalProperties: true,
    },
  },
};

const STATUS_TEXT: Record<number, string> = {
  400: "Bad request",
  401: "Missing or unknown bearer token",
  403: "Token not allowed for this namespace or role",
  404: "Not found",
  409: "Conflict",
  410: "Gone",
  413: "Body over 64 KiB",
  429: "Rate limited",
  500: "Internal error (a bug; never for bad input)",
};

/** The envelope narrowed to `codes`, as an OpenAPI response object. */
function errorResponse(status: number, codes: readonly ErrorCode[]): Json {
  const response: Json = {
    description: `${STATUS_TEXT[status] ?? "Error"}: ${codes.join(", ")}`,
    content: {
      "application/json": {
        schema: {
          allOf: [
            { $ref: "#/components/schemas/Error" },
            { properties: { error: { properties: { code: { enum: codes } } } } },
          ],
        },
      },
    },
  };
  if (status === 429) {
    response["headers"] = { "Retry-After": { schema: { type: "integer", minimum: 1 }, description: "seconds" } };
  }
  return response;
}

/** Responses every `/v1` operation shares, referenced instead of repeated. */
const COMMON_RESPONSES = ["invalid_request", "unauthorized", "forbidden", "payload_too_large", "internal"] as const;

function errorResponses(route: RouteSpec): Record<string, Json> {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of routeErrorCodes(route)) {
    const status = ERROR_STATUS[code];
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  const out: Record<string, Json> = {};
  for (const [status, codes] of [...byStatus].sort(([a], [b]) => a - b)) {
    const [only] = codes;
    const shared = codes.length === 1 && (COMMON_RESPONSES as readonly string[]).includes(only ?? "");
    out[String(status)] = shared ? { $ref: `#/components/responses/${only}` } : errorResponse(status, codes);
  }
  return out;
}

function pathParameters(route: RouteSpec): Json[] {
  return pathParamNames(route.path).map((name) => ({
    name,
    in: "path",
    required: true,
    description:
      route.opaqueParams?.includes(name) === true
        ? "an id an earlier answer returned; any other value is simply unknown"
        : `${NAME_DESCRIPTION}; percent-encoded (a "/" inside travels as %2F)`,
    schema: { type: "string", minLength: 1 },
  }));
}

function queryParameters(query: z.ZodObject | undefined): Json[] {
  if (query === undefined) return [];
  return Object.entries(query.shape).map(([name, schema]) => ({
    name,
    in: "query",
    required: !(schema as z.ZodType).safeParse(undefined).success,
    schema: inlineSchema(schema as z.ZodType),
  }));
}

function operation(route: RouteSpec, schemas: SchemaSet): Json {
  const name = route.operationId.charAt(0).toUpperCase() + route.operationId.slice(1);
  const success: Json = { description: route.status === 101 ? "Switching protocols (WebSocket)" : "Success" };
  if (route.response !== undefined) {
    success["content"] = { "application/json": { schema: schemas.ref(route.response, `${name}Response`) } };
  }
  const op: Json = {
    operationId: route.operationId,
    tags: [route.tag],
    summary: route.summary,
    parameters: [...pathParameters(route), ...queryParameters(route.query)],
    responses: { [String(route.status)]: success, ...errorResponses(route) },
  };
  if (route.description !== undefined) op["description"] = route.description;
  // Whether a client may send the request again (docs/protocol.md#client-retries).
  op["x-shiftlock-repeatable"] = routeRepeatable(route);
  if (route.role === "none") op["security"] = [];
  else op["x-shiftlock-role"] = route.role;
  if (route.body !== undefined) {
    op["requestBody"] = {
      required: false,
      description: `JSON, at most ${BODY_LIMIT_BYTES} bytes; unknown fields are rejected`,
      content: { "application/json": { schema: schemas.ref(route.body, `${name}Body`) } },
    };
  }
  if (route.websocket !== undefined) {
    (op["parameters"] as Json[]).push({
      name: "Upgrade",
      in: "header",
      required: true,
      schema: { type: "string", const: "websocket" },
    });
    op["x-websocket"] = {
      subprotocol: `${BEARER_SUBPROTOCOL_PREFIX}<token> (browsers; echoed in the handshake)`,
      ticket: `?${WATCH_TICKET_PARAM}=T instead of a token: T from POST /v1/ns/{ns}/watch-tickets (single use, 60 s)`,
      serverMessages: schemas.ref(route.websocket.server, `${name}ServerMessage`),
      clientMessages: schemas.ref(route.websocket.client, `${name}ClientMessage`),
      closeCodes: { "4008": "subscriber could not keep up; resume with the after… parameter" },
    };
  }
  return op;
}

function buildDocument(): Json {
  const schemas = new SchemaSet();
  const paths: Record<string, Record<string, Json>> = {};
  for (const route of ROUTES) {
    const item = (paths[route.path] ??= {});
    item[route.method.toLowerCase()] = operation(route, schemas);
  }
  return {
    openapi: "3.1.0",
    info: {
      title: "shiftlock",
      // The package version: the document describes the routes of this build.
      version: pkg.version,
      description:
        "Named claims with fencing tokens and two-phase handoff between deployment generations, and coord write " +
        "leases, on Cloudflare Durable Objects. Errors are {error:{code,message,...}}; unknown routes are 404 " +
        "not_found. 64-bit counters travel as decimal strings.",
    },
    servers: [{ url: "/" }],
    tags: [
      { name: "meta", description: "Health and this document" },
      { name: "claims", description: "Claims, fencing tokens and transfers (docs/protocol.md#claims)" },
      { name: "generations", description: "Deployment generations (docs/protocol.md#generations)" },
      { name: "coord", description: "Write leases per scope (docs/protocol.md#coord)" },
      { name: "listing", description: "Listing from the namespace index, and stats (docs/protocol.md#listing)" },
      {
        name: "watch",
        description: "Watch tickets: open a watch without a bearer token (docs/protocol.md#watch-tickets)",
      },
    ],
    security: [{ bearerAuth: [] }],
    paths,
    components: {
      responses: Object.fromEntries(COMMON_RESPONSES.map((code) => [code, errorResponse(ERROR_STATUS[code], [code])])),
      securitySchemes: {
        bearerAuth: {
          type: "http",
          scheme: "bearer",
          description:
            `Authorization: Bearer <token>. Browsers opening a WebSocket send the subprotocol ` +
            `${BEARER_SUBPROTOCOL_PREFIX}<token> instead. Tokens have a role (read = GET and watch, ` +
            `write = everything) and a namespace list.`,
        },
      },
      schemas: { Error: ERROR_SCHEMA, ...schemas.build() },
    },
  };
}

let cached: Json | undefined;

/** The OpenAPI 3.1 document (built on first use, then reused). */
export function openApiDocument(): Json {
  cached ??= buildDocument();
  return cached;
}
