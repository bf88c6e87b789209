// The Node front of `npm start` (src/serve/front.ts) against a stand-in upstream: what the
// caller receives when a kept-alive upstream connection is reset as the front reuses it (the
// race behind the torture runs' bursts of 502 after a SIGSTOP/SIGCONT), when the upstream
// really is unavailable, what of an oversized body reaches the upstream, and what becomes of
// a dot segment workerd would resolve.
import { createServer, request, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, beforeEach, expect, it, vi } from "vitest";
import { DOT_SEGMENT_MARK, markDotSegments } from "../../src/serve/dot-segments.ts";
import { startFront, type RunningFront } from "../../src/serve/front.ts";
import { converse } from "../e2e/raw-http.ts";

/** What the stand-in upstream does with the n-th request it reads on one connection. */
type Behaviour = (requestOnSocket: number) => "answer" | "reset";

interface Upstream {
  server: Server;
  /** Every request it read, with whether it answered it. */
  seen: { body: string; answered: boolean }[];
}

async function upstream(behaviour: Behaviour): Promise<Upstream> {
  const seen: Upstream["seen"] = [];
  const perSocket = new WeakMap<object, number>();
  const server = createServer((req: IncomingMessage, res) => {
    const n = (perSocket.get(req.socket) ?? 0) + 1;
    perSocket.set(req.socket, n);
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks).toString("utf8");
      const answer = behaviour(n) === "answer";
      seen.push({ body, answered: answer });
      if (!answer) {
        req.socket.destroy(); // closed under the front, before any byte of an answer
        return;
      }
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ echo: body }));
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { server, seen };
}

let up: Upstream | undefined;
let front: RunningFront | undefined;
let errors: string[] = [];

beforeEach(() => {
  errors = [];
  vi.spyOn(console, "error").mockImplementation((line: unknown) => void errors.push(String(line)));
});

afterEach(async () => {
  await front?.close();
  if (up !== undefined) {
    const closed = new Promise((resolve) => up!.server.close(resolve));
    up.server.closeAllConnections();
    await closed;
  }
  front = up = undefined;
  vi.restoreAllMocks();
});

async function through(behaviour: Behaviour): Promise<string> {
  up = await upstream(behaviour);
  const { port } = up.server.address() as AddressInfo;
  front = await startFront({ host: "127.0.0.1", port: 0, upstream: new URL(`http://127.0.0.1:${port}`) });
  return front.url;
}

const post = (url: string, body: string, headers: Record<string, string> = {}) =>
  fetch(`${url}/v1/ns/a/claims/c/acquire`, {
    method: "POST",
    body,
    headers: { "content-type": "application/json", ...headers },
  });

it("sends a request again on a new connection when its reused connection was reset before any answer", async () => {
  // The first request on a connection is answered, the second is reset: exactly what a
  // reused idle connection that the upstream closed meanwhile looks like.
  const url = await through((n) => (n === 1 ? "answer" : "reset"));
  expect((await post(url, '{"first":1}')).status).toBe(200);
  const res = await post(url, '{"second":"é"}');
  expect(res.status).toBe(200);
  expect(await res.json()).toEqual({ echo: '{"second":"é"}' });
  // Reset once on the reused connection, answered once on a new one, with the same body.
  expect(up!.seen).toEqual([
    { body: '{"first":1}', answered: true },
    { body: '{"second":"é"}', answered: false },
    { body: '{"second":"é"}', answered: true },
  ]);
  expect(errors).toEqual([]);
});

it("answers 502 with the envelope, once, when a new connection is reset: no retry", async () => {
  const url = await through(() => "reset");
  const res = await post(url, "{}");
  expect(res.status).toBe(502);
  expect(await res.json()).toEqual({
    error: { code: "internal", message: "local server: upstream unavailable (ECONNRESET)" },
  });
  expect(up!.seen).toHaveLength(1);
  expect(errors.map((line) => JSON.parse(line) as unknown)).toEqual([
    { front: "upstream_failed", method: "POST", path: "/v1/ns/a/claims/c/acquire", cause: "ECONNRESET" },
  ]);
});

it("sends a chunked body again too, chunked as it came: it was read whole first", async () => {
  const url = await through((n) => (n === 1 ? "answer" : "reset"));
  expect((await post(url, "{}")).status).toBe(200);
  const chunked = new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(new TextEncoder().encode('{"streamed":true}'));
      controller.close();
    },
  });
  const res = await fetch(`${url}/v1/ns/a/claims/c/acquire`, {
    method: "POST",
    body: chunked,
    duplex: "half",
  } as RequestInit);
  expect(res.status).toBe(200);
  expect(up!.seen.filter((s) => s.body === '{"streamed":true}')).toEqual([
    { body: '{"streamed":true}', answered: false },
    { body: '{"streamed":true}', answered: true },
  ]);
});

/**
 * A stand-in for workerd serving the Worker: a body declared over 64 KiB is refused on its
 * length, unread; a chunked one once a byte too many arrived; then the connection is closed,
 * as workerd closes one whose body it did not read. It records every body's framing and size.
 */
async function refusingUpstream(): Promise<{ server: Server; seen: string[] }> {
  const seen: string[] = [];
  const limit = 64 * 1024;
  const server = createServer((req, res) => {
    const refuse = (): void => {
      res.writeHead(413, { "content-type": "application/json", connection: "close" });
      res.end('{"error":{"code":"payload_too_large"}}', () => req.socket.destroy());
    };
    const declared = req.headers["content-length"];
    if (declared !== undefined && Number(declared) > limit) {
      seen.push(`declared ${declared}`);
      refuse();
      return;
    }
    let bytes = 0;
    req.on("data", (chunk: Buffer) => (bytes += chunk.length));
    req.on("end", () => {
      seen.push(`${declared === undefined ? "chunked" : "declared"} ${bytes}`);
      if (bytes > limit) refuse();
      else res.end(`{"bytes":${bytes}}`);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { server, seen };
}

it("sends upstream at most 64 KiB + 1 bytes of a body, relays the early answer, and keeps the caller's connection", async () => {
  const refusing = await refusingUpstream();
  up = { server: refusing.server, seen: [] };
  const { port } = refusing.server.address() as AddressInfo;
  front = await startFront({ host: "127.0.0.1", port: 0, upstream: new URL(`http://127.0.0.1:${port}`) });
  const body = (bytes: number) => Buffer.alloc(bytes, 0x20);
  const path = "/v1/ns/a/claims/c/acquire";
  for (const chunked of [false, true]) {
    const talk = await converse(front.url, [
      { method: "POST", path, body: body(10 * 1024 * 1024), chunked },
      { method: "POST", path, body: body(65_536), chunked },
    ]);
    expect(talk.error).toBeUndefined();
    expect(talk.answers.map((a) => [a.status, a.body])).toEqual([
      [413, '{"error":{"code":"payload_too_large"}}'],
      [200, '{"bytes":65536}'],
    ]);
  }
  // A declared body reaches the upstream declared as the 65,537 bytes it gets.
  expect(refusing.seen).toEqual(["declared 65537", "declared 65536", "chunked 65537", "chunked 65536"]);
  expect(errors).toEqual([]);
});

it("closes the caller's connection once it read 16 MiB of a body, after the answer", async () => {
  const refusing = await refusingUpstream();
  up = { server: refusing.server, seen: [] };
  const { port } = refusing.server.address() as AddressInfo;
  front = await startFront({ host: "127.0.0.1", port: 0, upstream: new URL(`http://127.0.0.1:${port}`) });
  const path = "/v1/ns/a/claims/c/acquire";
  const talk = await converse(front.url, [
    { method: "POST", path, body: Buffer.alloc(17 * 1024 * 1024, 0x20) },
    { method: "POST", path, body: Buffer.from("{}") },
  ]);
  expect(talk.answers.map((a) => a.status)).toEqual([413]);
  expect(refusing.seen).toEqual(["declared 65537"]);
});

it("puts the dot-segment mark in place of every '.' or '..' path segment, in any percent-encoding", () => {
  const mark = DOT_SEGMENT_MARK;
  expect(markDotSegments("/v1/ns/a/claims/../generations/g")).toBe(`/v1/ns/a/claims/${mark}/generations/g`);
  expect(markDotSegments("/v1/ns/a/claims/./x/%2e/%2E%2e/.%2E/%2e.")).toBe(
    `/v1/ns/a/claims/${mark}/x/${mark}/${mark}/${mark}/${mark}`,
  );
  // The query is not a path; names that only contain dots are names.
  expect(markDotSegments("/v1/ns/a/claims?prefix=..&cursor=.")).toBe("/v1/ns/a/claims?prefix=..&cursor=.");
  expect(markDotSegments("/v1/ns/a/claims/.../.a/a./%2e%2e%2e")).toBe("/v1/ns/a/claims/.../.a/a./%2e%2e%2e");
  expect(markDotSegments("/v1/ns/a/claims/..?x=1")).toBe(`/v1/ns/a/claims/${mark}?x=1`);
});

it("sends the marked target upstream, where the Worker refuses it", async () => {
  const paths: string[] = [];
  up = { server: createServer((req, res) => void (paths.push(req.url ?? ""), res.end("{}"))), seen: [] };
  await new Promise<void>((resolve) => up!.server.listen(0, "127.0.0.1", resolve));
  const { port } = up.server.address() as AddressInfo;
  front = await startFront({ host: "127.0.0.1", port: 0, upstream: new URL(`http://127.0.0.1:${port}`) });
  // fetch() (and a URL string) would resolve the dot segment itself; a raw path keeps it, as
  // curl --path-as-is does.
  await new Promise<void>((resolve, reject) => {
    const { port: frontPort } = new URL(front!.url);
    const path = "/v1/ns/a/volumes/v/stores/s/keys/../capability";
    const raw = request({ host: "127.0.0.1", port: frontPort, path }, (res) => {
      res.resume();
      res.on("end", resolve);
    });
    raw.on("error", reject);
    raw.end();
  });
  expect(paths).toEqual([`/v1/ns/a/volumes/v/stores/s/keys/${DOT_SEGMENT_MARK}/capability`]);
});
