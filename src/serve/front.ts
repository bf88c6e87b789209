/**
 * The Node front of `npm start`: a thin HTTP/WebSocket pass-through in front of workerd
 * that handles what workerd cannot see locally — a client that went away, and a path's
 * dot segments before URL parsing resolves them.
 *
 * Why it exists: docs/protocol.md#coord, #leaving-a-coord-wait say a waiting coord caller whose connection closes leaves the
 * queue. Served locally, workerd never tells the Worker that its client disconnected
 * (`Request.signal` does not fire, with or without Miniflare's entry worker; the experiment
 * is in docs/local-server.md). This front sees the socket close, and passes it on the way
 * docs/protocol.md#leaving-a-coord-wait defines for every caller: a waiting `POST …/leases` always carries a `waiterId`
 * (the front adds one when the caller did not), and when the caller's connection closes
 * before the answer, the front sends `DELETE …/leases/{waiterId}` with the caller's own
 * Authorization header — the wait is withdrawn, or a grant that could no longer be
 * delivered is given back.
 *
 * Guarantees:
 * - Every other request and every WebSocket upgrade passes through byte for byte (headers,
 *   status, body, frames) over kept-alive upstream connections, except a `.` or `..` path
 *   segment: workerd would resolve it (and could answer another route with a success, where
 *   docs/protocol.md#operating-at-scale says never), so the front puts `DOT_SEGMENT_MARK` in its place and the Worker
 *   refuses the path with `invalid_request`, CORS headers and all. A request body whose
 *   declared length is within the body limit is read whole first (so it can be sent again,
 *   below); a longer or chunked one streams through (the Worker answers 413 past the limit).
 * - A kept-alive upstream connection that workerd closed as the front reused it (the race
 *   every keep-alive client has with an idle-closing server; a SIGSTOP/SIGCONT of the
 *   server widens it) does not reach the caller: a request whose *reused* connection was
 *   reset before any byte of an answer is sent once more, on a new connection. Nothing else
 *   is retried — a failure on a new connection, or after the answer began, is final.
 * - An upstream failure the caller can still receive is answered `502` with the the protocol
 *   envelope (`internal`, the cause in the message) and logged on stderr; a failure after
 *   the caller went away is only the front tearing the request down, and is silent.
 *
 * Does not: authenticate, validate or decide anything (the Worker does, after the front),
 * withdraw a wait whose caller stays connected until `waitMs` passes, or make a request
 * that reached the Worker before its connection broke apply once (a reset connection
 * leaves that ambiguous, as it does for any client; claim mutations carry operation ids).
 */
import { randomUUID } from "node:crypto";
import type { ClientRequest, IncomingHttpHeaders, IncomingMessage, ServerResponse } from "node:http";
import { Agent, createServer, request as upstreamRequest } from "node:http";
import { connect } from "node:net";
import type { AddressInfo, Socket } from "node:net";
import { DOT_SEGMENT_MARK, isDotSegment } from "../protocol/names.ts";

/** Bodies the Worker accepts (docs/protocol.md#wire-conventions); a larger body streams through as it is (413 upstream). */
const BODY_LIMIT_BYTES = 64 * 1024;
const LEASES_PATH = /^\/v1\/ns\/[^/?]+\/volumes\/[^?]*\/leases$/;

export interface FrontOptions {
  host: string;
  port: number;
  /** The workerd socket the Worker listens on. */
  upstream: URL;
}

export interface RunningFront {
  url: string;
  close(): Promise<void>;
}

/** Start the front; resolves once it listens. */
export async function startFront(options: FrontOptions): Promise<RunningFront> {
  const agent = new Agent({ keepAlive: true, maxSockets: 256 });
  const target = { host: options.upstream.hostname, port: Number(options.upstream.port) };
  const sockets = new Set<Socket>();
  const server = createServer((req, res) => {
    proxy(req, res, target, agent).catch((err: unknown) => {
      // Reading the body fails when the caller goes away meanwhile: nobody to answer.
      if (!req.socket.destroyed) fail(req, res, err as NodeJS.ErrnoException);
    });
  });
  server.on("connection", (socket) => {
    sockets.add(socket);
    socket.once("close", () => sockets.delete(socket));
  });
  server.on("upgrade", (req: IncomingMessage, socket: Socket, head: Buffer) => tunnel(req, socket, head, target));
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, options.host, resolve);
  });
  // The port it really listens on (port 0 asks the system for a free one).
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://${options.host}:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const socket of sockets) socket.destroy();
        agent.destroy();
      }),
  };
}

type Target = { host: string; port: number };

async function proxy(req: IncomingMessage, res: ServerResponse, target: Target, agent: Agent): Promise<void> {
  const headers: IncomingHttpHeaders = { ...req.headers };
  let waiterId: string | undefined;
  let body = await replayableBody(req);
  if (body !== undefined && req.method === "POST" && LEASES_PATH.test(req.url ?? "")) {
    const withWaiter = ensureWaiterId(body);
    if (withWaiter !== undefined) {
      ({ body, waiterId } = withWaiter);
      headers["content-length"] = String(body.length);
      delete headers["transfer-encoding"];
    }
  }
  const path = markDotSegments(req.url ?? "/");
  let current: ClientRequest | undefined;
  let callerGone = false;
  const send = (fresh: boolean): void => {
    // `agent: false`: a connection of its own, never one that sat idle in the pool.
    const upstream = upstreamRequest({
      ...target,
      agent: fresh ? false : agent,
      method: req.method,
      path,
      headers,
    });
    current = upstream;
    let answered = false;
    upstream.on("response", (upRes) => {
      answered = true;
      res.writeHead(upRes.statusCode ?? 502, upRes.statusMessage, upRes.rawHeaders);
      upRes.pipe(res);
    });
    upstream.on("error", (err: NodeJS.ErrnoException) => {
      if (callerGone) return;
      if (!answered && !fresh && body !== undefined && upstream.reusedSocket && RESET_CODES.has(err.code ?? "")) {
        send(true);
        return;
      }
      fail(req, res, err);
    });
    if (body !== undefined) upstream.end(body);
    else req.pipe(upstream);
  };
  res.on("close", () => {
    if (res.writableFinished) return;
    // The caller went away before its answer: stop waiting upstream, and withdraw its wait.
    callerGone = true;
    current?.destroy();
    if (waiterId !== undefined) withdraw(req, waiterId, target, agent);
  });
  send(false);
}

/**
 * The request target with every `.` or `..` path segment (in any percent-encoding) replaced
 * by {@link DOT_SEGMENT_MARK}: workerd would resolve it and could answer another route with
 * a success, where docs/protocol.md#operating-at-scale says such a path never succeeds; the Worker refuses the mark with
 * `invalid_request` (its CORS headers and envelope included). The query is left alone.
 */
export function markDotSegments(target: string): string {
  const queryAt = target.indexOf("?");
  const path = queryAt === -1 ? target : target.slice(0, queryAt);
  const segments = path.split("/");
  if (!segments.some(isDotSegment)) return target;
  const marked = segments.map((segment) => (isDotSegment(segment) ? DOT_SEGMENT_MARK : segment)).join("/");
  return queryAt === -1 ? marked : marked + target.slice(queryAt);
}

/** How a kept-alive connection closed by the other end shows when it is written to. */
const RESET_CODES = new Set(["ECONNRESET", "EPIPE"]);

/**
 * The whole body when it can be sent again: none at all, or a declared length within the
 * limit. Undefined: chunked or longer, to be streamed once.
 */
async function replayableBody(req: IncomingMessage): Promise<Buffer | undefined> {
  const declared = req.headers["content-length"];
  if (declared === undefined) return req.headers["transfer-encoding"] === undefined ? Buffer.alloc(0) : undefined;
  return Number(declared) <= BODY_LIMIT_BYTES ? readAll(req) : undefined;
}

/** The body with a `waiterId` for a waiting acquire, or undefined to pass it on untouched. */
function ensureWaiterId(body: Buffer): { body: Buffer; waiterId: string } | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString("utf8"));
  } catch {
    return undefined;
  }
  if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) return undefined;
  const request = parsed as Record<string, unknown>;
  if (typeof request["waitMs"] !== "number" || request["waitMs"] <= 0) return undefined;
  if (typeof request["waiterId"] === "string") return { body, waiterId: request["waiterId"] };
  if (request["waiterId"] !== undefined) return undefined;
  const waiterId = randomUUID();
  return { body: Buffer.from(JSON.stringify({ ...request, waiterId })), waiterId };
}

/** `DELETE …/leases/{waiterId}` as the departed caller (docs/protocol.md#leaving-a-coord-wait); best effort. */
function withdraw(req: IncomingMessage, waiterId: string, target: Target, agent: Agent): void {
  const headers: Record<string, string> = {};
  if (req.headers.authorization !== undefined) headers["authorization"] = req.headers.authorization;
  const path = `${req.url ?? ""}/${encodeURIComponent(waiterId)}`;
  const cancel = upstreamRequest({ ...target, agent, method: "DELETE", path, headers }, (res) => res.resume());
  cancel.on("error", () => undefined);
  cancel.end();
}

async function readAll(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req as AsyncIterable<Buffer>) chunks.push(chunk);
  return Buffer.concat(chunks);
}

/** A WebSocket upgrade: the raw bytes both ways, the handshake included. */
function tunnel(req: IncomingMessage, client: Socket, head: Buffer, target: Target): void {
  const upstream = connect(target.port, target.host, () => {
    const lines = [`${req.method} ${markDotSegments(req.url ?? "/")} HTTP/${req.httpVersion}`];
    for (let i = 0; i < req.rawHeaders.length; i += 2) lines.push(`${req.rawHeaders[i]}: ${req.rawHeaders[i + 1]}`);
    upstream.write(`${lines.join("\r\n")}\r\n\r\n`);
    if (head.length > 0) upstream.write(head);
    upstream.pipe(client);
    client.pipe(upstream);
  });
  const end = (): void => {
    upstream.destroy();
    client.destroy();
  };
  upstream.on("error", end);
  client.on("error", end);
  upstream.on("close", end);
  client.on("close", end);
}

function fail(req: IncomingMessage, res: ServerResponse, err: NodeJS.ErrnoException): void {
  const cause = err.code ?? err.message;
  console.error(JSON.stringify({ front: "upstream_failed", method: req.method, path: req.url, cause }));
  if (res.headersSent) {
    res.destroy();
    return;
  }
  res.writeHead(502, { "content-type": "application/json" });
  res.end(JSON.stringify({ error: { code: "internal", message: `local server: upstream unavailable (${cause})` } }));
}
