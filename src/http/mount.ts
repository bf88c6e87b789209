/**
 * Mounting a declared route (src/protocol/route.ts) on the Worker's router: the one
 * request pipeline every route shares.
 *
 * Guarantees, for every mounted route, in this order:
 * 1. authorization against the route's declared role and the path's namespace (the
 *    authentication middleware in app.ts has already run for every `/v1` path);
 * 2. the path's percent-encoding and its names validated (docs/protocol.md#wire-conventions name rules; opaque ids
 *    such as `leaseId` pass as they are);
 * 3. the query string validated against the declared schema (each parameter once);
 * 4. a WebSocket route refuses a request without `Upgrade: websocket`;
 * 5. the body size-limited, parsed and decoded with the declared schema;
 * then the handler runs with decoded inputs, and {@link send} renders what it returns. Bad
 * input therefore never reaches a Durable Object, and every answer — success, refusal or
 * thrown error — leaves through `send`, so statuses and `Retry-After` are decided once; a
 * Durable Object call the platform refuses as overloaded is 503 `overloaded` (platform-errors.ts).
 * Every write and every refusal writes one structured log line (request-log.ts) here.
 *
 * Does not: decide anything about claims, generations or scopes (the objects do).
 */
import type { Context, Hono } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import type { WireResponse } from "../protocol/wire-response.ts";
import { ShiftlockError } from "../protocol/errors.ts";
import type { RouteInput, RouteSpec } from "../protocol/route.ts";
import { mayRepeat, pathParamNames } from "../protocol/route.ts";
import type { AppEnv } from "./app-env.ts";
import { authorize, type Grant } from "./auth.ts";
import { jsonBody, queryParams } from "./body.ts";
import { checkPathEncoding, nameParam } from "./params.ts";
import { callObject } from "./platform-errors.ts";
import { addressed, isLogged, logRequest } from "./request-log.ts";
import { systemClock } from "../core/clock.ts";
import { TICKET_USE_PARAMS } from "../durable/ticket-log.ts";
import { WATCH_TICKET_PARAM } from "../protocol/watch-ticket-routes.ts";

export type AppContext = Context<AppEnv>;

/** A route's handler: decoded inputs in, a wire answer (or an upgrade `Response`) out. */
export type RouteHandler<R extends RouteSpec> = (
  c: AppContext,
  input: RouteInput<R>,
) => WireResponse | Response | Promise<WireResponse | Response>;

/** Register `route` on `app` with `handler` behind the shared pipeline (see module doc). */
export function mount<R extends RouteSpec>(app: Hono<AppEnv>, route: R, handler: RouteHandler<R>): void {
  const path = route.path.replace(/\{([^}]+)\}/g, ":$1");
  // Decided once per route, not per request: which parameters are names and which are opaque.
  const params = pathParamNames(route.path).map((name) => ({
    name,
    opaque: route.opaqueParams?.includes(name) === true,
  }));
  app.on(route.method, path, async (c) => {
    const startedMs = systemClock.nowMs();
    let input: RouteInput<R> | undefined;
    let answer: WireResponse | Response;
    try {
      input = await validate(c, route, params);
      const decoded = input;
      // A platform overload is a 503 `overloaded`, never a 500 (platform-errors.ts).
      answer = await callObject(mayRepeat(route, decoded.body), async () => handler(c, decoded));
    } catch (err) {
      if (err instanceof ShiftlockError) answer = errorAnswer(err);
      else {
        // A bug or a platform failure (e.g. the local runtime out of SQLite memory): still one
        // request line, so a 500 is seen where every other answer is.
        console.error("route failed", route.operationId, err);
        answer = errorAnswer(new ShiftlockError("internal"));
      }
    }
    if (!(answer instanceof Response) && isLogged(route, answer.status)) {
      const where = addressed(route, input?.params ?? rawParams(c, params), input?.body);
      const note = (input?.body as { note?: unknown } | undefined)?.note;
      // Routes without a role run before authentication: no grant then.
      const grant: Grant | undefined = c.get("grant");
      const caller = { tokenName: grant?.name, note: typeof note === "string" ? note : undefined };
      logRequest(where, route.operationId, answer, systemClock.nowMs() - startedMs, caller);
    }
    return send(c, answer);
  });
}

/** The path parameters as they came, for the log line of a request refused before decoding. */
function rawParams(c: AppContext, specs: readonly { name: string }[]): Record<string, string> {
  return Object.fromEntries(specs.map(({ name }) => [name, c.req.param(name) ?? ""]));
}

async function validate<R extends RouteSpec>(
  c: AppContext,
  route: R,
  paramSpecs: readonly { name: string; opaque: boolean }[],
): Promise<RouteInput<R>> {
  if (route.role !== "none") authorize(c.get("grant"), c.req.param("ns") ?? "", route.role);
  checkPathEncoding(c.req.url);
  const params: Record<string, string> = {};
  for (const { name, opaque } of paramSpecs) {
    params[name] = opaque ? (c.req.param(name) ?? "") : nameParam(c, name);
  }
  // A watch's ticket was checked by the authentication middleware (app.ts); it is no query of the route.
  const ignored = route.status === 101 ? [WATCH_TICKET_PARAM] : [];
  const query: unknown = route.query === undefined ? undefined : queryParams(c, route.query, ignored);
  if (route.status === 101 && c.req.header("Upgrade")?.toLowerCase() !== "websocket") {
    throw new ShiftlockError("invalid_request", "this route needs a WebSocket upgrade (Upgrade: websocket)", {
      field: "Upgrade",
    });
  }
  const body: unknown = route.body === undefined ? undefined : await jsonBody(c, route.body);
  return { params, query, body } as RouteInput<R>;
}

/** Seconds for `Retry-After`, from a refusal's `retryAfterMs` (default one second). */
function retryAfterSeconds(body: object | null): number {
  const retryAfterMs = (body as { error?: { retryAfterMs?: unknown } } | null)?.error?.retryAfterMs;
  return typeof retryAfterMs === "number" && Number.isFinite(retryAfterMs)
    ? Math.max(1, Math.ceil(retryAfterMs / 1000))
    : 1;
}

/**
 * Render an answer: 204 without a body, JSON otherwise, `Retry-After` on every 429 and 503
 * (docs/protocol.md#errors, #overload). An upgrade `Response` passes through untouched.
 */
export function send(c: AppContext, answer: WireResponse | Response): Response {
  if (answer instanceof Response) return answer;
  if (answer.status === 204) return c.body(null, 204);
  if (answer.status === 429 || answer.status === 503) {
    c.header("Retry-After", String(retryAfterSeconds(answer.body)));
  }
  return c.json(answer.body, answer.status as ContentfulStatusCode);
}

/** The wire answer of a thrown {@link ShiftlockError}. */
export function errorAnswer(err: ShiftlockError): WireResponse {
  return { status: err.status, body: err.toEnvelope() };
}

/**
 * Forward a validated watch upgrade to its object. Only the upgrade travels on: the object
 * sees neither the bearer token nor its subprotocol (app.ts echoes that in the 101), and of
 * a watch ticket only its id and expiry, so the object can refuse a second use. A refusal
 * from the object (e.g. over its watcher cap) is re-rendered through {@link send}.
 */
export async function forwardWatch(
  c: AppContext,
  stub: { fetch(url: string, init: RequestInit): Promise<Response> },
  params: Readonly<Record<string, string>>,
): Promise<WireResponse | Response> {
  const target = new URL("https://object.internal/watch");
  for (const [key, value] of Object.entries(params)) target.searchParams.set(key, value);
  const ticket = c.get("ticket");
  if (ticket !== undefined) {
    target.searchParams.set(TICKET_USE_PARAMS.id, ticket.id);
    target.searchParams.set(TICKET_USE_PARAMS.expiresAtMs, String(ticket.expiresAtMs));
  }
  const res = await stub.fetch(target.toString(), { headers: { Upgrade: "websocket" } });
  if (res.status === 101) return res;
  return { status: res.status, body: await res.json<object | null>() };
}
