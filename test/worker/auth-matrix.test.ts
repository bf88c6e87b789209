// docs/protocol.md#authentication-and-roles as a matrix generated from the route declarations (src/protocol/routes.ts):
// every declared route × {no token, unknown token, read token, write token of another
// namespace, write token, admin token} × {Authorization header; for watch routes also the
// `shiftlock.bearer.<token>` WebSocket subprotocol}. Each request addresses a seeded world
// with a body that would change it if allowed, and:
// - no or unknown token → 401 `unauthorized`; another namespace → 403 `forbidden`; a read
//   token on a write or admin route, and a write token on an admin route (evict) → 403
//   `forbidden` (routes without a role answer everyone);
// - a denied request changes nothing: every stored row and alarm of the world's objects is
//   the same afterwards;
// - an allowed request passes authentication, authorization and validation: it answers a
//   status its declaration lists, never 401, 403, `invalid_request` or `internal`.
import { exports } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { BEARER_SUBPROTOCOL_PREFIX } from "../../src/http/auth.ts";
import type { RouteSpec } from "../../src/protocol/route.ts";
import { routeStatuses } from "../../src/protocol/route.ts";
import { ROUTES } from "../../src/protocol/routes.ts";
import type { World } from "./route-world.ts";
import { dumpWorld, seedWorld, worldBody, worldPath } from "./route-world.ts";

// The first request loads the Worker module, which can take seconds on a busy machine.
beforeAll(async () => {
  await exports.default.fetch("http://x/healthz");
}, 60_000);

interface Identity {
  name: string;
  /** The token presented, or null for none. */
  token: string | null;
  /** What docs/protocol.md#wire-conventions answers for a route of each role: a denial, or "allowed". */
  expect: (role: RouteSpec["role"]) => { status: 401 | 403; code: string } | "allowed";
}

const IDENTITIES: readonly Identity[] = [
  { name: "no token", token: null, expect: (role) => (role === "none" ? "allowed" : UNAUTHORIZED) },
  {
    name: "unknown token",
    token: "test-unknown-token",
    expect: (role) => (role === "none" ? "allowed" : UNAUTHORIZED),
  },
  {
    name: "read token",
    token: "test-read-all",
    expect: (role) => (role === "write" || role === "admin" ? FORBIDDEN : "allowed"),
  },
  // The world's namespace is never `alpha`, the only one this token may touch.
  {
    name: "write token of another namespace",
    token: "test-write-alpha",
    expect: (role) => (role === "none" ? "allowed" : FORBIDDEN),
  },
  { name: "write token", token: "test-write-all", expect: (role) => (role === "admin" ? FORBIDDEN : "allowed") },
  { name: "admin token", token: "test-admin-all", expect: () => "allowed" },
];
const UNAUTHORIZED = { status: 401, code: "unauthorized" } as const;
const FORBIDDEN = { status: 403, code: "forbidden" } as const;

type Transport = "header" | "subprotocol";

/** Every way to present a token to `route`: the header, and for watch routes the subprotocol too. */
function transports(route: RouteSpec): Transport[] {
  return route.websocket === undefined ? ["header"] : ["header", "subprotocol"];
}

function request(route: RouteSpec, w: World, token: string | null, transport: Transport): Promise<Response> {
  const headers: Record<string, string> = {};
  if (route.websocket !== undefined) headers["Upgrade"] = "websocket";
  if (token !== null && transport === "header") headers["Authorization"] = `Bearer ${token}`;
  if (token !== null && transport === "subprotocol") {
    headers["Sec-WebSocket-Protocol"] = `${BEARER_SUBPROTOCOL_PREFIX}${token}`;
  }
  const body = worldBody(route, w);
  if (body !== undefined) headers["Content-Type"] = "application/json";
  return exports.default.fetch(`http://x${worldPath(route, w)}`, {
    method: route.method,
    headers,
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
}

/** The error code of an answer (undefined for a success), closing an accepted WebSocket. */
async function codeOf(res: Response): Promise<string | undefined> {
  if (res.status === 101) {
    res.webSocket?.accept();
    res.webSocket?.close(1000, "done");
    return undefined;
  }
  const text = await res.text();
  if (res.status < 400) return undefined;
  const body = JSON.parse(text) as { error?: { code?: unknown; message?: unknown } };
  expect(typeof body.error?.message, `error envelope: ${text}`).toBe("string");
  return typeof body.error?.code === "string" ? body.error.code : `(no code in ${text})`;
}

describe("auth matrix: every declared route × identity × transport", () => {
  for (const route of ROUTES) {
    it(`${route.method} ${route.path}`, async () => {
      const w = await seedWorld("authz");
      const statuses = routeStatuses(route);
      // Denials first: each must leave the world exactly as it was.
      const ordered = [...IDENTITIES].sort(
        (a, b) => Number(a.expect(route.role) === "allowed") - Number(b.expect(route.role) === "allowed"),
      );
      for (const identity of ordered) {
        for (const transport of transports(route)) {
          const what = `${route.operationId} with ${identity.name} (${transport})`;
          const expected = identity.expect(route.role);
          const before = expected === "allowed" ? undefined : await dumpWorld(w);
          const res = await request(route, w, identity.token, transport);
          const code = await codeOf(res);
          if (expected !== "allowed") {
            expect({ status: res.status, code }, what).toEqual(expected);
            expect(await dumpWorld(w), `${what} changed stored state`).toBe(before);
            continue;
          }
          expect(statuses.has(res.status), `${what} answered ${res.status} ${code}`).toBe(true);
          expect(
            ["unauthorized", "forbidden", "invalid_request", "internal"],
            `${what} answered ${code}`,
          ).not.toContain(code);
          if (res.status === 101 && transport === "subprotocol") {
            // Browsers fail a handshake that does not echo the offered subprotocol.
            expect(res.headers.get("Sec-WebSocket-Protocol")).toBe(`${BEARER_SUBPROTOCOL_PREFIX}${identity.token}`);
          }
        }
      }
    });
  }

  it("detects a change: the write token's claim release alters the world's dump", async () => {
    // The denial checks above compare dumps; this proves a dump does see an allowed mutation.
    const w = await seedWorld("authz");
    const release = ROUTES.find((r) => r.operationId === "releaseClaim")!;
    const before = await dumpWorld(w);
    const res = await request(release, w, "test-write-all", "header");
    expect(res.status).toBe(200);
    await res.arrayBuffer();
    expect(await dumpWorld(w)).not.toBe(before);
  });
});
