/**
 * What the watch socket does with a live connection: keep it alive, notice when it died
 * silently, and read its JSON frames.
 *
 * Guarantees: a socket that delivered nothing for a whole ping interval is closed (the
 * watch then reconnects and resumes), so a black-holed connection never stalls a watch
 * forever; closing never throws.
 */
import type { Clock } from "../../core/clock.ts";
import { WATCH_PING_TEXT } from "../../protocol/watch.ts";
import { OPEN, type WebSocketLike } from "./websocket.ts";

/** Close a client socket without throwing (it may be closing or never opened). */
export function closeQuietly(socket: WebSocketLike): void {
  try {
    socket.close(1000, "client closed");
  } catch {
    // Already closing or never opened.
  }
}

/**
 * Ping every `intervalMs` until `signal` aborts or the socket closes; close the socket when
 * nothing was heard since the previous ping (`heardSinceLastPing` reads and resets that).
 * `beforePing` is told just before each ping goes out (the lease channel counts each ping
 * as a keepalive sent at that instant).
 */
export async function pingUntilSilent(
  socket: WebSocketLike,
  clock: Clock,
  intervalMs: number,
  signal: AbortSignal,
  heardSinceLastPing: () => boolean,
  beforePing?: () => void,
): Promise<void> {
  for (;;) {
    try {
      await clock.sleep(intervalMs, signal);
    } catch {
      return;
    }
    if (socket.readyState !== OPEN) return;
    if (!heardSinceLastPing()) {
      closeQuietly(socket);
      return;
    }
    try {
      beforePing?.();
      socket.send(WATCH_PING_TEXT);
    } catch {
      closeQuietly(socket);
      return;
    }
  }
}

/** A frame's JSON object, or undefined when the frame is not a JSON object. */
export function parseFrame(data: unknown): Record<string, unknown> | undefined {
  let message: unknown;
  try {
    message = JSON.parse(typeof data === "string" ? data : new TextDecoder().decode(data as ArrayBuffer));
  } catch {
    return undefined;
  }
  return message !== null && typeof message === "object" ? (message as Record<string, unknown>) : undefined;
}
