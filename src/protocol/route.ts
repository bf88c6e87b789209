/**
 * A route of the API, declared once: method, path, inputs, success status, answer, error
 * codes, role and whether it upgrades to a WebSocket.
 *
 * Guarantees: everything about a route is derived from its declaration — the router mounts
 * it (validate → handler → one `send`), `/openapi.json` describes it, and the client calls
 * it (`call(route, input)`) and decodes its answer with the same schemas. Request schemas
 * are zod codecs whose *output* is the code form (`bigint` counters), so the server decodes
 * and the client encodes with one schema. The types {@link RouteInput} and
 * {@link RouteResult} follow the schemas, so adding a field to a schema reaches the router,
 * the client and the in-memory backends through the type checker.
 *
 * Does not: import Hono or any runtime beyond zod, so the client can import declarations
 * without pulling in the server (see docs/adr/0007-routes-declared-once.md).
 */
import type { z } from "zod";
import type { ErrorCode } from "./errors.ts";
import { ERROR_STATUS } from "./errors.ts";

export type HttpMethod = "GET" | "POST" | "PATCH" | "DELETE";

/**
 * Who may call a route: anyone, or a token with at least the `read`, `write` or `admin` role
 * (docs/protocol.md#authentication-and-roles).
 */
export type RouteRole = "none" | "read" | "write" | "admin";

/**
 * Whether a request to a route may be sent again when its answer was lost or the service was
 * overloaded (docs/protocol.md#client-retries): `always` (reads, keepalive, release, …: the
 * same request twice leaves what once leaves), `withOperationId` (a mutation that carries an
 * `operationId`, which the server replays), `never` (a publish, a lease request: a lost
 * answer is resolved by reading).
 */
export type Repeatable = "always" | "withOperationId" | "never";

/** The names of the `{param}`s of a path template, as a union of string literals. */
export type PathParamNames<P extends string> = P extends `${string}{${infer K}}${infer Rest}`
  ? K | PathParamNames<Rest>
  : never;

/** A route declaration. Build one with {@link defineRoute} so its literal types are kept. */
export interface RouteSpec {
  /** Unique, stable operation name (OpenAPI `operationId`). */
  operationId: string;
  tag: "meta" | "claims" | "generations" | "coord" | "listing" | "watch";
  summary: string;
  description?: string;
  method: HttpMethod;
  /** OpenAPI path template, e.g. `/v1/ns/{ns}/claims/{claim}`. Every `{param}` is a name. */
  path: string;
  /** Parameters that are opaque ids rather than names (any value; unknown ones are simply unknown). */
  opaqueParams?: readonly string[];
  role: RouteRole;
  /** Query string (each parameter at most once; unknown ones rejected). */
  query?: z.ZodObject;
  /** JSON body (at most 64 KiB; unknown fields rejected). */
  body?: z.ZodType;
  /** Success status; 101 = WebSocket upgrade. */
  status: 200 | 201 | 204 | 101;
  /** Success body; absent for 204 and 101. */
  response?: z.ZodType;
  /** The codes the protocol assigns to this route, beyond those common to every `/v1` route. */
  errors: readonly ErrorCode[];
  /** WebSocket routes: what the server sends and what the client may send. */
  websocket?: { server: z.ZodType; client: z.ZodType };
  /** May a request be repeated (see {@link Repeatable})? Default: `always` for GET, else `never`. */
  repeatable?: Repeatable;
  /**
   * A heartbeat (a claim's renew, a lease's keepalive): it only moves a deadline, so its
   * success writes no request log line — its refusals do (docs/operations.md).
   */
  heartbeat?: true;
}

/** Declare a route, keeping its literal types (path, method, schemas). */
export function defineRoute<const R extends RouteSpec>(route: R): R {
  return route;
}

type Field<R, K extends keyof RouteSpec> = R extends { [P in K]: infer S extends z.ZodType } ? z.output<S> : undefined;

/** Path parameters of `R`, decoded (the namespace included). */
export type RouteParams<R extends RouteSpec> = { [K in PathParamNames<R["path"]>]: string };
/** Decoded query of `R` (`undefined` when it takes none). */
export type RouteQuery<R extends RouteSpec> = Field<R, "query">;
/** Decoded body of `R` (`undefined` when it takes none). */
export type RouteBody<R extends RouteSpec> = Field<R, "body">;
/** Decoded success body of `R` (`undefined` for 204 and 101). */
export type RouteResult<R extends RouteSpec> = Field<R, "response">;

/** What a handler receives: every input of the route, validated and decoded. */
export interface RouteInput<R extends RouteSpec> {
  params: RouteParams<R>;
  query: RouteQuery<R>;
  body: RouteBody<R>;
}

/** The path parameter names of a template, in order. */
export function pathParamNames(path: string): string[] {
  return [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]!);
}

/** Fill a path template, percent-encoding each value (a `/` inside a name travels as `%2F`). */
export function fillPath(path: string, params: Readonly<Record<string, string>>): string {
  return path.replace(/\{([^}]+)\}/g, (_, name: string) => encodeURIComponent(params[name] ?? ""));
}

/** The codes every authenticated route can answer, whatever it does. */
// `overloaded`: any route that reaches a Durable Object can meet the platform's overload.
const COMMON_CODES = ["invalid_request", "unauthorized", "forbidden", "internal", "overloaded"] as const;

/** Every code `route` can answer: its own, the common ones, and `payload_too_large` with a body. */
export function routeErrorCodes(route: RouteSpec): ErrorCode[] {
  const codes = new Set<ErrorCode>(route.errors);
  if (route.role !== "none") for (const code of COMMON_CODES) codes.add(code);
  if (route.body !== undefined) codes.add("payload_too_large");
  return [...codes];
}

/** Every status `route` can answer: its success status and its codes' statuses. */
export function routeStatuses(route: RouteSpec): Set<number> {
  return new Set([route.status, ...routeErrorCodes(route).map((code) => ERROR_STATUS[code])]);
}

/** The route's declared {@link Repeatable}, or its default. */
export function routeRepeatable(route: RouteSpec): Repeatable {
  return route.repeatable ?? (route.method === "GET" ? "always" : "never");
}

/**
 * True when this request to `route` (its decoded or wire body) may be sent again: the route
 * is repeatable, or repeatable with an operation id and the body carries one (a batch: every
 * op carries one).
 */
export function mayRepeat(route: RouteSpec, body: unknown): boolean {
  const repeatable = routeRepeatable(route);
  if (repeatable !== "withOperationId") return repeatable === "always";
  const carries = (value: unknown): boolean =>
    typeof value === "object" && value !== null && (value as { operationId?: unknown }).operationId !== undefined;
  const ops = (body as { ops?: unknown } | null | undefined)?.ops;
  return Array.isArray(ops) ? ops.length > 0 && ops.every(carries) : carries(body);
}
