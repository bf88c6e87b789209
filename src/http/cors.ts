/**
 * CORS for browsers calling the API from another origin (docs/protocol.md#browsers-and-cors).
 *
 * Guarantees:
 * - `CORS_ORIGINS` is a comma-separated list of origins, or `*`; unset or empty allows no
 *   origin (a deployment's default). `npm start` sets `*`.
 * - A preflight `OPTIONS` on any `/v1` path is answered 204 *before* authentication (a
 *   browser never sends credentials on a preflight), naming the allowed methods and the
 *   request headers `authorization` and `content-type`; an origin not allowed gets a 204
 *   without `access-control-allow-origin`, which the browser treats as a refusal.
 * - Every other `/v1` answer — success, refusal or error — carries
 *   `access-control-allow-origin` for an allowed origin and exposes `retry-after`.
 * - Credentials are never allowed: tokens travel in headers, not cookies, so
 *   `access-control-allow-credentials` is never sent.
 *
 * Does not: apply to WebSocket upgrades (browsers do not use CORS for them; the bearer
 * subprotocol authenticates them) or to `/healthz`, `/openapi.json` and the pages.
 */
import type { MiddlewareHandler } from "hono";
import type { AppEnv } from "./app-env.ts";

const ALLOWED_METHODS = "GET, POST, PATCH, DELETE, OPTIONS";
const ALLOWED_HEADERS = "authorization, content-type";
/** How long a browser may cache a preflight answer (seconds). */
const PREFLIGHT_MAX_AGE_S = 600;

/** The `access-control-allow-origin` value for `origin`, or undefined when it is not allowed. */
export function allowedOrigin(configured: string | undefined, origin: string | undefined): string | undefined {
  if (origin === undefined || configured === undefined) return undefined;
  const allowed = configured.split(",").map((o) => o.trim());
  if (allowed.includes("*")) return "*";
  return allowed.includes(origin) ? origin : undefined;
}

export const cors: MiddlewareHandler<AppEnv> = async (c, next) => {
  const origin = allowedOrigin(c.env.CORS_ORIGINS, c.req.header("Origin"));
  if (c.req.method === "OPTIONS") {
    const headers: Record<string, string> = { Vary: "Origin" };
    if (origin !== undefined) {
      headers["Access-Control-Allow-Origin"] = origin;
      headers["Access-Control-Allow-Methods"] = ALLOWED_METHODS;
      headers["Access-Control-Allow-Headers"] = ALLOWED_HEADERS;
      headers["Access-Control-Max-Age"] = String(PREFLIGHT_MAX_AGE_S);
    }
    return c.body(null, 204, headers);
  }
  await next();
  if (c.res.status === 101) return undefined;
  c.res.headers.append("Vary", "Origin");
  if (origin !== undefined) {
    c.res.headers.set("Access-Control-Allow-Origin", origin);
    c.res.headers.set("Access-Control-Expose-Headers", "Retry-After");
  }
  return undefined;
};
