// No secret in any log line the server writes (docs/auth.md): every declared route is
// called with a valid token, an unknown one and (for watches) every way a watch can
// authenticate — the Authorization header, the `shiftlock.bearer.<token>` subprotocol, and
// a watch ticket as our browser client uses it — while every console method is captured.
// No line may contain a presented token, a watch ticket or a lease id.
import { exports } from "cloudflare:workers";
import { afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { BEARER_SUBPROTOCOL_PREFIX } from "../../src/http/auth.ts";
import type { RouteSpec } from "../../src/protocol/route.ts";
import { ROUTES } from "../../src/protocol/routes.ts";
import type { World } from "./route-world.ts";
import { seedWorld, worldBody, worldPath } from "./route-world.ts";

beforeAll(async () => {
  await exports.default.fetch("http://x/healthz");
}, 60_000);

afterEach(() => {
  vi.restoreAllMocks();
});

const WRITE = "test-write-all";
const READ = "test-read-all";
const UNKNOWN = "test-unknown-secret-token";

const METHODS = ["log", "info", "warn", "error", "debug"] as const;

/** Everything written to the console while `run` ran, one string per call. */
async function captured(run: () => Promise<void>): Promise<string[]> {
  const lines: string[] = [];
  for (const method of METHODS) {
    vi.spyOn(console, method).mockImplementation((...args: unknown[]) => {
      lines.push(args.map((a) => (typeof a === "string" ? a : (JSON.stringify(a) ?? String(a)))).join(" "));
    });
  }
  try {
    await run();
  } finally {
    vi.restoreAllMocks();
  }
  return lines;
}

type Auth = { kind: "header"; token: string } | { kind: "subprotocol"; token: string } | { kind: "ticket" };

/** Consume an answer: accept and close a socket, read a body. */
async function finish(res: Response): Promise<void> {
  if (res.status === 101) {
    res.webSocket?.accept();
    res.webSocket?.close(1000, "done");
    return;
  }
  await res.arrayBuffer();
}

async function request(route: RouteSpec, w: World, auth: Auth, tickets: string[]): Promise<void> {
  const headers: Record<string, string> = {};
  let path = worldPath(route, w);
  if (route.websocket !== undefined) headers["Upgrade"] = "websocket";
  if (auth.kind === "header") headers["Authorization"] = `Bearer ${auth.token}`;
  if (auth.kind === "subprotocol") headers["Sec-WebSocket-Protocol"] = `${BEARER_SUBPROTOCOL_PREFIX}${auth.token}`;
  if (auth.kind === "ticket") {
    const issued = await exports.default.fetch(`http://x/v1/ns/${encodeURIComponent(w.ns)}/watch-tickets`, {
      method: "POST",
      headers: { Authorization: `Bearer ${READ}`, "Content-Type": "application/json" },
      body: JSON.stringify({ path }),
    });
    expect(issued.status).toBe(201);
    const { ticket } = await issued.json<{ ticket: string }>();
    tickets.push(ticket);
    path = `${path}?ticket=${encodeURIComponent(ticket)}`;
  }
  const body = worldBody(route, w);
  if (body !== undefined) headers["Content-Type"] = "application/json";
  await finish(
    await exports.default.fetch(`http://x${path}`, {
      method: route.method,
      headers,
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    }),
  );
}

function ways(route: RouteSpec): Auth[] {
  const out: Auth[] = [
    { kind: "header", token: UNKNOWN },
    { kind: "header", token: READ },
    { kind: "header", token: WRITE },
  ];
  if (route.websocket !== undefined) {
    out.push({ kind: "subprotocol", token: UNKNOWN }, { kind: "subprotocol", token: READ }, { kind: "ticket" });
  }
  return out;
}

describe("no secret in any log line", () => {
  for (const route of ROUTES) {
    it(`${route.method} ${route.path}`, async () => {
      const w = await seedWorld("logs");
      const tickets: string[] = [];
      const lines = await captured(async () => {
        for (const auth of ways(route)) await request(route, w, auth, tickets);
      });
      const secrets = [WRITE, READ, UNKNOWN, ...tickets, ...Object.values(w.leases)];
      for (const line of lines) {
        for (const secret of secrets) expect(line, `log line of ${route.operationId}`).not.toContain(secret);
      }
    });
  }

  it("the capture sees the server's lines (a refused request writes one)", async () => {
    const lines = await captured(async () => {
      await finish(
        await exports.default.fetch("http://x/v1/ns/n/claims/c", { headers: { Authorization: "Bearer x" } }),
      );
    });
    expect(lines.some((line) => line.includes('"outcome":"unauthorized"'))).toBe(true);
  });
});
