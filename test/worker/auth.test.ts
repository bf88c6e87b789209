// docs/protocol.md#authentication-and-roles through the real router: authentication and authorization come before
// every other check on every /v1 route, roles and namespaces are enforced, and browsers can
// authenticate a WebSocket with the `shiftlock.bearer.<token>` subprotocol.
import { exports } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { withEchoedSubprotocol } from "../../src/http/auth.ts";

// The first request loads the Worker module, which can take seconds on a busy machine.
beforeAll(async () => {
  await exports.default.fetch("http://x/healthz");
}, 60_000);

type Headers = Record<string, string>;

async function send(method: string, path: string, headers: Headers = {}, body?: string) {
  const init: RequestInit = { method, headers };
  if (body !== undefined) init.body = body;
  return exports.default.fetch(`http://x${path}`, init);
}

async function expectError(res: Response, status: number, code: string) {
  expect(res.status).toBe(status);
  expect(res.headers.get("Content-Type")).toMatch(/^application\/json/);
  const body = await res.json<{ error: { code: string; message: string } }>();
  expect(body.error.code).toBe(code);
  expect(typeof body.error.message).toBe("string");
  return body;
}

const ns = () => `auth-${crypto.randomUUID()}`;

/** One request per kind of /v1 route, with a body that would be valid. */
function routes(namespace: string): [string, string, string?][] {
  const gen = crypto.randomUUID();
  return [
    ["GET", `/v1/ns/${namespace}/generations/${gen}`],
    ["POST", `/v1/ns/${namespace}/generations`, JSON.stringify({ id: gen, service: "s", instanceId: "i" })],
    ["PATCH", `/v1/ns/${namespace}/generations/${gen}`, JSON.stringify({ state: "standby" })],
    ["GET", `/v1/ns/${namespace}/claims/c-${gen}`],
    ["POST", `/v1/ns/${namespace}/claims/c-${gen}/acquire`, JSON.stringify({ generationId: gen, ttlMs: 1000 })],
    ["GET", `/v1/ns/${namespace}/volumes/v/stores/s-${gen}/snapshot`],
    ["DELETE", `/v1/ns/${namespace}/volumes/v/stores/s-${gen}/leases/l-1`],
    ["GET", `/v1/no-such-route`],
  ];
}

describe("authentication", () => {
  it.each([
    ["no Authorization header", {}],
    ["a malformed header", { Authorization: "Bearer" }],
    ["another scheme", { Authorization: "Basic dGVzdC13cml0ZS1hbGw6" }],
    ["two tokens", { Authorization: "Bearer test-write-all test-write-all" }],
    ["an unknown token", { Authorization: "Bearer test-write-all-but-wrong" }],
    ["a prefix of a real token", { Authorization: "Bearer test-write" }],
  ])("refuses %s with 401 on every route", async (_what, headers: Headers) => {
    for (const [method, path, body] of routes(ns())) {
      const res = await send(method, path, headers, body);
      await expectError(res, 401, "unauthorized");
    }
  });

  it("refuses an unauthenticated DELETE of a lease with 401, not 204", async () => {
    const res = await send("DELETE", `/v1/ns/${ns()}/volumes/v/stores/s/leases/anything`);
    await expectError(res, 401, "unauthorized");
  });

  it("checks the token before the path, the body and the size", async () => {
    await expectError(await send("GET", "/v1/ns/%ZZ/generations/x"), 401, "unauthorized");
    await expectError(await send("POST", `/v1/ns/${ns()}/generations`, {}, "{not json"), 401, "unauthorized");
    const big = "x".repeat(70_000);
    await expectError(await send("POST", `/v1/ns/${ns()}/generations`, {}, big), 401, "unauthorized");
  });

  it("never echoes the presented token", async () => {
    const res = await send("GET", `/v1/ns/${ns()}/generations/g`, { Authorization: "Bearer secret-guess-123" });
    expect(await res.text()).not.toContain("secret-guess-123");
  });
});

describe("authorization", () => {
  it("lets a read token GET but not write (403 before validation)", async () => {
    const namespace = ns();
    const read = { Authorization: "Bearer test-read-all" };
    expect((await send("GET", `/v1/ns/${namespace}/generations/g`, read)).status).toBe(404);
    for (const [method, path, body] of routes(namespace).filter(([m]) => m !== "GET")) {
      await expectError(await send(method, path, read, body), 403, "forbidden");
    }
    await expectError(await send("POST", `/v1/ns/${namespace}/generations`, read, "{bad"), 403, "forbidden");
    await expectError(await send("POST", "/v1/ns/%ZZ/generations/%ZZ", read, "{bad"), 403, "forbidden");
  });

  it("authorizes before validating the path", async () => {
    const alpha = { Authorization: "Bearer test-write-alpha" };
    await expectError(await send("GET", "/v1/ns/%ZZ/generations/g", alpha), 403, "forbidden");
    await expectError(await send("GET", "/v1/ns/al%07pha/generations/g", alpha), 403, "forbidden");
    await expectError(await send("GET", "/v1/ns/alpha/generations/%ZZ", alpha), 400, "invalid_request");
    const all = { Authorization: "Bearer test-write-all" };
    await expectError(await send("GET", "/v1/ns/%ZZ/generations/g", all), 400, "invalid_request");
  });

  it("confines a namespaced token to its namespaces, reads included", async () => {
    const alpha = { Authorization: "Bearer test-write-alpha" };
    const id = crypto.randomUUID();
    const register = JSON.stringify({ id, service: "s", instanceId: "i" });
    expect((await send("POST", "/v1/ns/alpha/generations", alpha, register)).status).toBe(200);
    await expectError(await send("POST", "/v1/ns/beta/generations", alpha, register), 403, "forbidden");
    await expectError(await send("GET", `/v1/ns/beta/generations/${id}`, alpha), 403, "forbidden");
    // The namespace is compared after percent-decoding, so an encoded form is the same namespace.
    expect((await send("GET", `/v1/ns/%61lpha/generations/${id}`, alpha)).status).toBe(200);
    await expectError(await send("GET", `/v1/ns/ALPHA/generations/${id}`, alpha), 403, "forbidden");
  });

  it("lets write tokens do everything in their namespaces", async () => {
    const namespace = ns();
    const write = { Authorization: "Bearer test-write-all" };
    const id = crypto.randomUUID();
    const res = await send(
      "POST",
      `/v1/ns/${namespace}/generations`,
      write,
      JSON.stringify({ id, service: "s", instanceId: "i" }),
    );
    expect(res.status).toBe(200);
    const patch = await send(
      "PATCH",
      `/v1/ns/${namespace}/generations/${id}`,
      write,
      JSON.stringify({ state: "standby" }),
    );
    expect(patch.status).toBe(200);
  });
});

describe("WebSocket subprotocol token", () => {
  const upgrade = (protocols: string): Headers => ({ Upgrade: "websocket", "Sec-WebSocket-Protocol": protocols });

  it("accepts shiftlock.bearer.<token> for a watch and echoes it in the handshake", async () => {
    const res = await send(
      "GET",
      `/v1/ns/${ns()}/claims/c-${crypto.randomUUID()}/watch`,
      upgrade("shiftlock.bearer.test-read-all"),
    );
    expect(res.status).toBe(101);
    expect(res.headers.get("Sec-WebSocket-Protocol")).toBe("shiftlock.bearer.test-read-all");
    const socket = res.webSocket!;
    socket.accept();
    const first = new Promise<string>((resolve) =>
      socket.addEventListener("message", (e) => resolve(String(e.data)), { once: true }),
    );
    expect(JSON.parse(await first)).toMatchObject({ type: "snapshot", claim: null });
    socket.close(1000, "done");
  });

  it("refuses an unknown subprotocol token with 401 and no upgrade", async () => {
    const res = await send("GET", `/v1/ns/${ns()}/claims/c/watch`, upgrade("shiftlock.bearer.wrong-token"));
    await expectError(res, 401, "unauthorized");
    expect(res.webSocket).toBeNull();
  });

  it("applies namespaces to subprotocol tokens too", async () => {
    const res = await send("GET", "/v1/ns/beta/claims/c/watch", upgrade("shiftlock.bearer.test-write-alpha"));
    await expectError(res, 403, "forbidden");
  });

  it("does not accept the subprotocol token on a plain request", async () => {
    const res = await send("GET", `/v1/ns/${ns()}/generations/g`, {
      "Sec-WebSocket-Protocol": "shiftlock.bearer.test-read-all",
    });
    await expectError(res, 401, "unauthorized");
  });

  it("echoes the subprotocol on a 101 that lacks it, keeping the socket", () => {
    const pair = new WebSocketPair();
    const res = new Response(null, { status: 101, webSocket: pair[0] });
    const echoed = withEchoedSubprotocol(res, "shiftlock.bearer.tok");
    expect(echoed?.status).toBe(101);
    expect(echoed?.webSocket).toBe(pair[0]);
    expect(echoed?.headers.get("Sec-WebSocket-Protocol")).toBe("shiftlock.bearer.tok");
    expect(withEchoedSubprotocol(echoed!, "shiftlock.bearer.tok")).toBeUndefined();
    expect(withEchoedSubprotocol(res, undefined)).toBeUndefined();
    expect(withEchoedSubprotocol(new Response("x"), "shiftlock.bearer.tok")).toBeUndefined();
  });
});
