/**
 * A raw HTTP/1.1 conversation on one TCP connection, for tests that must see what happens to
 * the connection itself (fetch and http.Agent pick connections on their own).
 *
 * Guarantees: the requests go out one after another on one connection, each body written
 * whole (declared with `content-length`, or `transfer-encoding: chunked` in 64 KiB chunks)
 * whatever the server answers meanwhile, as a client does; the last request asks the server
 * to close (`connection: close`). Every answer the server sent before it closed is returned,
 * in order, with the connection error if there was one (a reset).
 *
 * Does not: time anything out (the test's timeout does), or follow redirects.
 */
import { connect } from "node:net";

export interface RawRequest {
  method: string;
  path: string;
  headers?: Record<string, string>;
  body?: Buffer;
  /** Send the body chunked (no declared length). */
  chunked?: boolean;
}

export interface RawAnswer {
  status: number;
  /** Header names in lower case. */
  headers: Record<string, string>;
  body: string;
}

export interface Conversation {
  answers: RawAnswer[];
  /** The connection's error code (`ECONNRESET`, `EPIPE`, …), if it had one. */
  error?: string;
}

const CHUNK_BYTES = 64 * 1024;

/** Send `requests` on one connection to `url`'s host and port; resolves once it closed. */
export function converse(url: string, requests: RawRequest[]): Promise<Conversation> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = connect(Number(port), hostname);
    const received: Buffer[] = [];
    let error: string | undefined;
    socket.on("data", (data: Buffer) => received.push(data));
    socket.on("error", (err: NodeJS.ErrnoException) => (error ??= err.code ?? err.message));
    socket.on("close", () => {
      const answers = parseAnswers(Buffer.concat(received));
      resolve(error === undefined ? { answers } : { answers, error });
    });
    const pieces = requests.flatMap((request, i) => encode(request, i === requests.length - 1));
    const pump = (): void => {
      while (pieces.length > 0) {
        if (socket.destroyed) return;
        if (!socket.write(pieces.shift()!)) {
          socket.once("drain", pump);
          return;
        }
      }
    };
    socket.once("connect", pump);
  });
}

/** A request as the buffers to write, the body in pieces of {@link CHUNK_BYTES}. */
function encode(request: RawRequest, last: boolean): Buffer[] {
  const body = request.body ?? Buffer.alloc(0);
  const lines = [`${request.method} ${request.path} HTTP/1.1`, "host: localhost"];
  for (const [name, value] of Object.entries(request.headers ?? {})) lines.push(`${name}: ${value}`);
  lines.push(request.chunked ? "transfer-encoding: chunked" : `content-length: ${body.length}`);
  if (last) lines.push("connection: close");
  const out: Buffer[] = [Buffer.from(`${lines.join("\r\n")}\r\n\r\n`)];
  for (let at = 0; at < body.length; at += CHUNK_BYTES) {
    const piece = body.subarray(at, at + CHUNK_BYTES);
    out.push(request.chunked ? Buffer.concat([Buffer.from(`${piece.length.toString(16)}\r\n`), piece, crlf]) : piece);
  }
  if (request.chunked) out.push(Buffer.from("0\r\n\r\n"));
  return out;
}

const crlf = Buffer.from("\r\n");

/** Every complete answer in `bytes` (1xx skipped); a body has a declared length or is chunked. */
function parseAnswers(bytes: Buffer): RawAnswer[] {
  const answers: RawAnswer[] = [];
  let at = 0;
  for (;;) {
    const headEnd = bytes.indexOf("\r\n\r\n", at);
    if (headEnd === -1) return answers;
    const [statusLine = "", ...lines] = bytes.subarray(at, headEnd).toString("latin1").split("\r\n");
    const status = Number(statusLine.split(" ")[1]);
    const headers: Record<string, string> = {};
    for (const line of lines) {
      const colon = line.indexOf(":");
      headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
    }
    at = headEnd + 4;
    if (status < 200) continue;
    let body: Buffer;
    if (headers["transfer-encoding"] === "chunked") {
      const parts: Buffer[] = [];
      for (;;) {
        const sizeEnd = bytes.indexOf("\r\n", at);
        if (sizeEnd === -1) return answers;
        const size = parseInt(bytes.subarray(at, sizeEnd).toString("latin1"), 16);
        at = sizeEnd + 2;
        if (size === 0) {
          at += 2;
          break;
        }
        parts.push(bytes.subarray(at, at + size));
        at += size + 2;
      }
      body = Buffer.concat(parts);
    } else {
      const length = Number(headers["content-length"] ?? bytes.length - at);
      if (at + length > bytes.length) return answers;
      body = bytes.subarray(at, at + length);
      at += length;
    }
    answers.push({ status, headers, body: body.toString("utf8") });
  }
}
