/**
 * Server-side WebSocket helpers shared by the claim and scope objects' watches.
 *
 * Guarantees: closing never throws (a socket may already be closing, and 1005/1006 cannot
 * be sent, so callers pass 1000 or an application code); a refused upgrade is a plain JSON
 * envelope response, never a half-open socket.
 *
 * Does not: accept sockets or count acks (fan-out.ts), or build the 101 (object-base.ts).
 */

import { errorEnvelope } from "../protocol/errors.ts";
import { WATCH_PONG_TEXT } from "../protocol/watch.ts";

/** Close without ever throwing. */
export function closeQuietly(ws: WebSocket, code: number, reason: string): void {
  try {
    ws.close(code, reason);
  } catch {
    // Already closed: nothing left to tell the peer.
  }
}

/**
 * Read a watch subscriber's message: answer a ping (in any spelling the runtime's
 * auto-response did not catch) and return any other JSON object for the caller to interpret.
 * Anything that is not a JSON object is ignored.
 */
export function readClientMessage(ws: WebSocket, data: string | ArrayBuffer): Record<string, unknown> | undefined {
  if (typeof data !== "string") return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(data);
  } catch {
    return undefined;
  }
  if (parsed === null || typeof parsed !== "object") return undefined;
  const message = parsed as Record<string, unknown>;
  if (message["type"] === "ping") {
    ws.send(WATCH_PONG_TEXT);
    return undefined;
  }
  return message;
}

/** Watcher cap when `MAX_WATCHERS_PER_OBJECT` is unset or not a positive integer. */
const DEFAULT_MAX_WATCHERS = 2000;

/** The configured watcher cap per object (`MAX_WATCHERS_PER_OBJECT`), or the default. */
export function maxWatchersFrom(configured: string | undefined): number {
  const value = Number.parseInt(configured ?? "", 10);
  return Number.isSafeInteger(value) && value > 0 ? value : DEFAULT_MAX_WATCHERS;
}

/** 429 for a watch over the object's cap; the subscriber retries after a second. */
export function tooManyWatchers(what: string): Response {
  return jsonResponse(429, errorEnvelope("rate_limited", `too many watchers on this ${what}`, { retryAfterMs: 1000 }), {
    "Retry-After": "1",
  });
}

/** A JSON response for a refused watch upgrade (the upgrade never happens). */
export function jsonResponse(status: number, body: unknown, headers?: HeadersInit): Response {
  const h = new Headers(headers);
  h.set("Content-Type", "application/json");
  return new Response(JSON.stringify(body), { status, headers: h });
}
