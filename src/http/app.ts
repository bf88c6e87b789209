/**
 * The Worker's router: the one place requests are authenticated, errors are rendered and
 * the declared routes are mounted.
 *
 * Guarantees:
 * - Every `/v1` request is authenticated before any other check (an unauthenticated
 *   `DELETE` of a lease is 401, not 204); each route then authorizes its declared role for
 *   the path's namespace before validating anything (mount.ts).
 * - Every error, from any layer, leaves as the error envelope with the status from
 *   `ERROR_STATUS`, through the same `send` as every success; unknown routes are 404
 *   `not_found`; a 500 is only ever a bug (a platform overload is 503, platform-errors.ts).
 * - A watch authenticated by the `shiftlock.bearer.<token>` subprotocol gets that
 *   subprotocol echoed in its 101 here, in the router: the token never travels to an object.
 */
import { Hono } from "hono";
import { ShiftlockError } from "../protocol/errors.ts";
import { health, openApi, whoami } from "../protocol/routes.ts";
import type { AppEnv } from "./app-env.ts";
import { authenticate, authorize, presentedToken, withEchoedSubprotocol, type Grant } from "./auth.ts";
import { mountClaimRoutes } from "./claims.ts";
import { cors } from "./cors.ts";
import { mountCoordRoutes } from "./coord.ts";
import { mountGenerationRoutes } from "./generations.ts";
import { mountListingRoutes } from "./listing.ts";
import { errorAnswer, mount, send } from "./mount.ts";
import { openApiDocument } from "./openapi.ts";
import { mountPages } from "./pages.ts";
import { platformRefusal } from "./platform-errors.ts";
import { logRequest } from "./request-log.ts";
import { mountWatchTicketRoutes, verifyTicket } from "./watch-tickets.ts";
import { WATCH_TICKET_PARAM } from "../protocol/watch-ticket-routes.ts";
import { systemClock } from "../core/clock.ts";

export const app = new Hono<AppEnv>();

app.onError((err, c) => {
  if (err instanceof ShiftlockError) {
    // Refused before any route ran (authentication, unknown route): still one log line.
    const answer = errorAnswer(err);
    const ns = /^\/v1\/ns\/([^/]*)\//.exec(new URL(c.req.url).pathname)?.[1];
    const grant: Grant | undefined = c.get("grant");
    const where = { namespace: safeDecode(ns ?? ""), kind: "", name: "" };
    logRequest(where, `${c.req.method} (no route)`, answer, 0, { tokenName: grant?.name });
    return send(c, answer);
  }
  // A platform overload outside a mounted route (platform-errors.ts) is still no bug.
  const refusal = platformRefusal(err);
  if (refusal !== undefined) return send(c, errorAnswer(refusal));
  console.error("unhandled error", err);
  return send(c, errorAnswer(new ShiftlockError("internal")));
});

app.notFound((c) => {
  const path = new URL(c.req.url).pathname;
  // A path no route declares still answers "who are you / may you" first: a read token
  // writing, or any token outside its namespaces, is 403 here too, never a 404 hint.
  const ns = /^\/v1\/ns\/([^/]*)\//.exec(path)?.[1];
  if (ns !== undefined) authorize(c.get("grant"), safeDecode(ns), c.req.method === "GET" ? "read" : "write");
  return send(c, errorAnswer(new ShiftlockError("not_found", `no route for ${c.req.method} ${path}`)));
});

function safeDecode(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

mount(app, health, () => ({ status: 200, body: { ok: true } }));
mount(app, openApi, () => ({ status: 200, body: openApiDocument() }));
mountPages(app);

// CORS outermost, so preflights skip authentication and every answer, errors included,
// carries the headers (docs/protocol.md#operating-at-scale).
app.use("/v1/*", cors);
// Authentication first, for every /v1 path, known route or not.
app.use("/v1/*", async (c, next) => {
  const url = new URL(c.req.url);
  const ticket = url.searchParams.get(WATCH_TICKET_PARAM);
  if (ticket !== null) {
    // A ticket authenticates one watch upgrade of its own path and nothing else (docs/protocol.md#watch-tickets).
    if (c.req.header("Upgrade")?.toLowerCase() !== "websocket") throw new ShiftlockError("unauthorized");
    const use = await verifyTicket(c.env, ticket, url.pathname, systemClock.nowMs());
    c.set("grant", use.grant);
    c.set("ticket", use);
    await next();
    return;
  }
  const presented = presentedToken(c.req.raw.headers);
  if (presented === undefined) throw new ShiftlockError("unauthorized");
  const grant = await authenticate(c.env.AUTH_TOKENS, presented.token);
  if (grant === undefined) throw new ShiftlockError("unauthorized");
  c.set("grant", grant);
  await next();
  // Browsers fail a handshake that does not echo one of their subprotocols (docs/protocol.md#wire-conventions).
  const echoed = withEchoedSubprotocol(c.res, presented.subprotocol);
  if (echoed !== undefined) {
    c.res = undefined; // replace, not merge: Hono would rebuild the 101 without its socket
    c.res = echoed;
  }
});

// The calling token's name and role (docs/protocol.md#roles-names-and-whoami): any role may ask.
mount(app, whoami, (c) => {
  const { name, role } = c.get("grant");
  return { status: 200, body: { name, role } };
});
mountClaimRoutes(app);
mountGenerationRoutes(app);
mountCoordRoutes(app);
mountListingRoutes(app);
mountWatchTicketRoutes(app);
