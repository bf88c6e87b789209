/**
 * Server-side WebSocket helpers shared by the claim and scope objects' watches.
 *
 * Guarantees: closing never throws (a socket may already be closing, and 1005/1006 cannot
 * be sent, so callers pass 1000 or an application code); a refused upgrade is a plain JSON
 * envelope response, never a half-open socket.
 */

/** Close without ever throwing. */
export function closeQuietly(ws: WebSocket, code: number, reason: string): void {
  try {
    ws.close(code, reason);
  } catch {
    // Already closed: nothing left to tell the peer.
  }
}

/** A JSON response for a refused watch upgrade (the upgrade never happens). */
export function jsonResponse(status: number, body: unknown, headers?: HeadersInit): Response {
  const h = new Headers(headers);
  h.set("Content-Type", "application/json");
  return new Response(JSON.stringify(body), { status, headers: h });
}
