/**
 * The Worker's router: the one place requests are authenticated, errors are rendered and
 * resources are mounted.
 *
 * Guarantees:
 * - Every `/v1` request is authenticated and authorized before any other check (an
 *   unauthenticated `DELETE` of a lease is 401, not 204).
 * - Every error, from any layer, leaves as the SPEC envelope with the status from
 *   {@link ERROR_STATUS}; unknown routes are 404 `not_found`; a 5xx is only ever a bug.
 * - Route modules validate input from the `protocol/` schemas before touching an object.
 */
import { Hono } from "hono";
import { authenticate, authorize, presentedToken, withEchoedSubprotocol } from "./auth.ts";
import type { AppEnv } from "./app-env.ts";
import { nameParam, strictPathEncoding } from "./params.ts";
import { claimRoutes } from "./claims.ts";
import { generationRoutes } from "./generations.ts";
import { coordRoutes } from "./coord.ts";
import { openApiDocument } from "./openapi.ts";
import { ShiftlockError, errorEnvelope } from "../protocol/errors.ts";

export const app = new Hono<AppEnv>();

app.onError((err, c) => {
  if (err instanceof ShiftlockError) {
    const headers: Record<string, string> = {};
    if (err.code === "rate_limited") {
      // SPEC: a 429 always says when to come back; default to one second.
      const retryAfterMs = err.details["retryAfterMs"];
      const seconds = typeof retryAfterMs === "number" && Number.isFinite(retryAfterMs) ? retryAfterMs / 1000 : 1;
      headers["Retry-After"] = String(Math.max(1, Math.ceil(seconds)));
    }
    return c.json(err.toEnvelope(), err.status, headers);
  }
  console.error("unhandled error", err);
  return c.json(errorEnvelope("internal"), 500);
});

app.notFound((c) =>
  c.json(errorEnvelope("not_found", `no route for ${c.req.method} ${new URL(c.req.url).pathname}`), 404),
);

app.get("/healthz", (c) => c.json({ ok: true }));
app.get("/openapi.json", (c) => c.json(openApiDocument()));

// Authentication first, for every /v1 path, known route or not.
app.use("/v1/*", async (c, next) => {
  const presented = presentedToken(c.req.raw.headers);
  if (presented === undefined) throw new ShiftlockError("unauthorized");
  const grant = await authenticate(c.env.AUTH_TOKENS, presented.token);
  if (grant === undefined) throw new ShiftlockError("unauthorized");
  c.set("grant", grant);
  await next();
  // Browsers fail a handshake that does not echo one of their subprotocols (SPEC §2).
  const echoed = withEchoedSubprotocol(c.res, presented.subprotocol);
  if (echoed !== undefined) {
    c.res = undefined; // replace, not merge: Hono would rebuild the 101 without its socket
    c.res = echoed;
  }
});
// Authorization next, before any validation (SPEC §2). A namespace that is not a valid name
// cannot be on a token's list, so a limited token gets 403 for it and a "*" token gets 400 below.
app.use("/v1/ns/:ns/*", async (c, next) => {
  authorize(c.get("grant"), c.req.param("ns") ?? "", c.req.method);
  await next();
});
app.use("/v1/*", strictPathEncoding);
app.use("/v1/ns/:ns/*", async (c, next) => {
  c.set("namespace", nameParam(c, "ns"));
  await next();
});

app.route("/v1/ns/:ns/claims", claimRoutes);
app.route("/v1/ns/:ns/generations", generationRoutes);
app.route("/v1/ns/:ns/volumes", coordRoutes);
