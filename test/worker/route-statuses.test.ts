// Every declared route, called through the Worker in several ways (a well-formed request
// built from its own schemas, an empty body, malformed JSON, no token, a read token, a
// foreign namespace), answers only statuses its declaration (and so /openapi.json) lists,
// and every error body is the error envelope with a code the declaration lists.
import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { ERROR_STATUS } from "../../src/protocol/errors.ts";
import type { RouteSpec } from "../../src/protocol/route.ts";
import { fillPath, pathParamNames, routeErrorCodes, routeStatuses } from "../../src/protocol/route.ts";
import { ROUTES } from "../../src/protocol/routes.ts";
import { watchClaim } from "../../src/protocol/claim-routes.ts";
import { issueWatchTicket } from "../../src/protocol/watch-ticket-routes.ts";
import { bodySchema, sample } from "./route-world.ts";

/** The namespace of the well-formed variant, which a watch ticket's `path` must name. */
const WELL_FORMED_NS = "ns-well-formed";

function wellFormedBody(route: RouteSpec): string | undefined {
  const schema = bodySchema(route);
  const path = fillPath(watchClaim.path, { ns: WELL_FORMED_NS, claim: "claim-1" });
  // `ttlMs` is optional where `bound: true` may replace it: a well-formed body names one of them.
  return schema === undefined ? undefined : JSON.stringify(sample(schema, "", { path, ttlMs: 60_000 }));
}

function url(route: RouteSpec, ns: string): string {
  const params = Object.fromEntries(pathParamNames(route.path).map((name) => [name, `${name}-1`]));
  return `http://x${fillPath(route.path, { ...params, ns })}`;
}

interface Variant {
  name: string;
  token: string | null;
  ns?: string;
  body?: string | undefined;
}

function variants(route: RouteSpec): Variant[] {
  // The weakest token the route allows, so its requests reach validation and the object.
  const allowed = route.role === "admin" ? "test-admin-all" : "test-write-all";
  const out: Variant[] = [
    {
      name: "well-formed",
      token: allowed,
      ...(route === issueWatchTicket ? { ns: WELL_FORMED_NS } : {}),
      body: wellFormedBody(route),
    },
  ];
  if (route.role === "none") return out;
  out.push({ name: "no token", token: null, body: wellFormedBody(route) });
  out.push({ name: "read token", token: "test-read-all", body: wellFormedBody(route) });
  out.push({ name: "foreign namespace", token: "test-write-alpha", ns: "beta", body: wellFormedBody(route) });
  if (route.body !== undefined) {
    out.push({ name: "empty object", token: allowed, body: "{}" });
    out.push({ name: "malformed JSON", token: allowed, body: "{bad" });
    out.push({ name: "wrong type", token: allowed, body: "[]" });
  }
  return out;
}

async function call(route: RouteSpec, v: Variant): Promise<Response> {
  const headers: Record<string, string> = {};
  if (v.token !== null) headers["Authorization"] = `Bearer ${v.token}`;
  if (route.status === 101) headers["Upgrade"] = "websocket";
  if (v.body !== undefined) headers["Content-Type"] = "application/json";
  const ns = v.ns ?? `ns-${crypto.randomUUID()}`;
  return exports.default.fetch(url(route, ns), {
    method: route.method,
    headers,
    ...(v.body === undefined ? {} : { body: v.body }),
  });
}

describe("every declared route answers only its documented statuses", () => {
  for (const route of ROUTES) {
    it(`${route.method} ${route.path}`, async () => {
      const allowed = routeStatuses(route);
      const codes = new Set<string>(routeErrorCodes(route));
      for (const v of variants(route)) {
        const res = await call(route, v);
        const what = `${route.operationId} (${v.name}) answered ${res.status}`;
        expect(allowed.has(res.status), what).toBe(true);
        if (res.status === 101) {
          res.webSocket?.accept();
          res.webSocket?.close(1000, "done");
          continue;
        }
        let code: string | undefined;
        if (res.status >= 400) {
          code = (await res.json<{ error?: { code?: string } }>()).error?.code;
          expect(codes.has(code ?? ""), `${what} with code ${code}`).toBe(true);
          expect(ERROR_STATUS[code as keyof typeof ERROR_STATUS]).toBe(res.status);
        } else {
          await res.arrayBuffer();
        }
        if (v.name === "no token") expect(res.status, what).toBe(401);
        if (v.name === "foreign namespace") expect(res.status, what).toBe(403);
        // A well-formed request passes validation: it succeeds or meets a rule of the object.
        const invalid = code === "invalid_request" || code === "internal";
        if (v.name === "well-formed") expect(invalid, `${what} with code ${code}`).toBe(false);
        if (v.name === "read token")
          expect(res.status === 403, what).toBe(route.role === "write" || route.role === "admin");
      }
    });
  }
});
