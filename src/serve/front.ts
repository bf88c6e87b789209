/**
 * The Node front of `npm start`: a thin HTTP/WebSocket pass-through in front of workerd
 * that handles what workerd cannot see locally — a client that went away, and a path's
 * dot segments before URL parsing resolves them.
 *
 * Why it exists: a waiting coord caller whose connection closes leaves the
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
 * - Every other request and every WebSocket upgrade passes through as it came (end-to-end
 *   headers, status, body, frames; an upgrade without its offer of extensions, see tunnel) over kept-alive upstream connections, except a `.` or `..` path
 *   segment, which workerd would resolve: the front marks it (dot-segments.ts) and the
 *   Worker refuses the path with `invalid_request`, CORS headers and all.
 * - A request body is read before anything goes upstream, at most 64 KiB + 1 bytes of it
 *   (request-body.ts): a body within that is sent whole (and can be sent again, below); a
 *   longer one sends upstream only those bytes (its declared length then says so), which is
 *   all the Worker reads of any body before it answers `413 payload_too_large`. The answer
 *   is relayed as it is, and then the front reads and drops the rest of the caller's body,
 *   up to 16 MiB of body in all, so the kept-alive connection serves the caller's next
 *   request; a longer body has its connection closed there (after the answer).
 * - A kept-alive upstream connection that workerd closed as the front reused it (the race
 *   every keep-alive client has with an idle-closing server; a SIGSTOP/SIGCONT of the
 *   server widens it) does not reach the caller: a request whose *reused* connection was
 *   reset before any byte of an answer is sent once more, on a new connection. Nothing else
 *   is retried — a failure on a new connection, or after the answer began, is final.
 * - An upstream failure the caller can still receive is answered `502` with the error
 *   envelope (`internal`, the cause in the message) and logged on stderr; a failure after
 *   the caller went away is only the front tearing the request down, and is silent, and
 *   one after the whole answer was relayed (workerd closing a connection whose body it
 *   did not read) changes nothing.
 * - No hop-by-hop header (`Connection`, the names it lists, `Keep-Alive`) is passed on
 *   either way: a `Connection: close` from workerd does not close the caller's connection.
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
import { markDotSegments } from "./dot-segments.ts";
import { dropRest, readHead, UPSTREAM_BODY_MAX_BYTES } from "./request-body.ts";

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
  const headers = endToEndHeaders(req.headers);
  const { head, complete, read } = await readHead(req, UPSTREAM_BODY_MAX_BYTES);
  let body = head;
  let waiterId: string | undefined;
  if (!complete) {
    // Over the limit: upstream gets the head only (all the Worker would read), declared as
    // what it is when the caller declared a length; the rest is dropped after the answer.
    if (headers["content-length"] !== undefined) headers["content-length"] = String(head.length);
    res.once("finish", () => dropRest(req, read));
  } else if (req.method === "POST" && LEASES_PATH.test(req.url ?? "")) {
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
    let relayed = false;
    upstream.on("response", (upRes) => {
      answered = true;
      upRes.once("end", () => (relayed = true));
      res.writeHead(upRes.statusCode ?? 502, upRes.statusMessage, endToEnd(upRes.rawHeaders));
      upRes.pipe(res);
    });
    upstream.on("error", (err: NodeJS.ErrnoException) => {
      // After the whole answer, a failure is only workerd closing a connection whose request
      // body it did not read (an early answer): the answer stands.
      if (callerGone || relayed) return;
      if (!answered && !fresh && upstream.reusedSocket && RESET_CODES.has(err.code ?? "")) {
        send(true);
        return;
      }
      fail(req, res, err);
    });
    upstream.end(body);
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
 * The headers that describe one connection (RFC 9110 §7.6.1: `Connection`, the names it
 * lists, `Keep-Alive`), which a proxy does not pass on: the caller's connection and the
 * upstream one are kept alive or closed each on its own terms. A `Connection: close` from
 * workerd (after a body it did not read) must not close the caller's connection.
 */
function hopByHop(connection: string | undefined): Set<string> {
  const names = new Set(["connection", "keep-alive"]);
  for (const name of (connection ?? "").split(",")) if (name.trim() !== "") names.add(name.trim().toLowerCase());
  return names;
}

/** `rawHeaders` (name, value, name, value, …) without the hop-by-hop ones. */
function endToEnd(rawHeaders: string[]): string[] {
  let connection: string | undefined;
  for (let i = 0; i < rawHeaders.length; i += 2) {
    if (rawHeaders[i]?.toLowerCase() === "connection") connection = rawHeaders[i + 1];
  }
  const drop = hopByHop(connection);
  return rawHeaders.filter((_, i) => !drop.has((rawHeaders[i - (i % 2)] ?? "").toLowerCase()));
}

/** The caller's headers without the hop-by-hop ones (the agent sets its own). */
function endToEndHeaders(headers: IncomingHttpHeaders): IncomingHttpHeaders {
  const drop = hopByHop(headers.connection);
  return Object.fromEntries(Object.entries(headers).filter(([name]) => !drop.has(name)));
}

/** How a kept-alive connection closed by the other end shows when it is written to. */
const RESET_CODES = new Set(["ECONNRESET", "EPIPE"]);

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

/**
 * A WebSocket upgrade: the raw bytes both ways, the handshake included — less the client's
 * offer of extensions. The Worker refuses permessage-deflate (`no_web_socket_compression`:
 * small JSON frames, CPU on both ends for few bytes); a local runtime that answers an upgrade
 * through anything in front of the Worker (as its static-assets router did) may accept the
 * offer under its own flags. Without an offer nothing is negotiated, as deployed.
 */
function tunnel(req: IncomingMessage, client: Socket, head: Buffer, target: Target): void {
  const upstream = connect(target.port, target.host, () => {
    const lines = [`${req.method} ${markDotSegments(req.url ?? "/")} HTTP/${req.httpVersion}`];
    for (let i = 0; i < req.rawHeaders.length; i += 2) {
      if (req.rawHeaders[i]?.toLowerCase() === "sec-websocket-extensions") continue;
      lines.push(`${req.rawHeaders[i]}: ${req.rawHeaders[i + 1]}`);
    }
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
