/**
 * Opening a watch WebSocket: the constructor to use and how the bearer token travels.
 *
 * Guarantees: Workers, browsers and Node ≥ 22 have a global `WebSocket`; Node 20 does not,
 * so a constructor (the `ws` package's default export) can be injected, and without either
 * opening a watch fails with `invalid_request` (`field: "WebSocket"`) before any network
 * use. The token travels as an `Authorization` header when the constructor can send
 * headers (an injected one, `ws`), else as the subprotocol `shiftlock.bearer.<token>`,
 * which is all a browser can send (docs/protocol.md#wire-conventions); `webSocketAuth` overrides the choice.
 *
 * Does not: read the socket (watch-socket.ts does).
 */
import type { Clock } from "../../core/clock.ts";
import { ShiftlockError } from "../../protocol/errors.ts";

/** The part of the WHATWG WebSocket the client uses (browsers, Workers, Node 22, `ws`). */
export interface WebSocketLike {
  readonly readyState: number;
  send(data: string): void;
  close(code?: number, reason?: string): void;
  addEventListener(type: "open" | "error", listener: () => void): void;
  addEventListener(type: "message", listener: (event: { data: unknown }) => void): void;
  addEventListener(type: "close", listener: (event: { code: number; reason: string }) => void): void;
}

/**
 * A WebSocket constructor. The third argument is what the `ws` package accepts (headers);
 * browser constructors ignore it.
 */
export type WebSocketConstructor = new (
  url: string,
  protocols?: string | string[],
  options?: { headers?: Record<string, string> },
) => WebSocketLike;

/** Options of every client with watches (`HttpClaimsBackend`, `HttpCoordinator`). */
export interface WatchConnectionOptions {
  /**
   * WebSocket constructor for watches. Defaults to `globalThis.WebSocket` (browsers,
   * Workers, Node ≥ 22). On Node 20 pass the `ws` package's default export.
   */
  WebSocket?: WebSocketConstructor;
  /**
   * How the bearer token travels in the WebSocket handshake: an `Authorization` header
   * (what `ws` can send) or the subprotocol `shiftlock.bearer.<token>` (what browsers can
   * send). Default: `"header"` when `WebSocket` is injected, `"subprotocol"` otherwise.
   */
  webSocketAuth?: "header" | "subprotocol";
  /** Timers for watch pings, reconnect backoff and lease keepalives. Default: the system clock. */
  clock?: Clock;
  /** Keep-alive ping period of watches, ms. Default 30 000. */
  watchPingIntervalMs?: number;
  /** Reconnect backoff bounds of watches, ms. Defaults 100 and 5 000. */
  watchReconnectMinMs?: number;
  watchReconnectMaxMs?: number;
}

/** The `readyState` of an open WebSocket. */
export const OPEN = 1;

/**
 * A function that opens an authenticated socket to a URL. Throws `invalid_request` when no
 * WebSocket constructor is available.
 */
export function socketOpener(options: WatchConnectionOptions, token: string): (url: string) => WebSocketLike {
  const Ctor = options.WebSocket ?? (globalThis as { WebSocket?: WebSocketConstructor }).WebSocket;
  if (Ctor === undefined) {
    throw new ShiftlockError(
      "invalid_request",
      "no WebSocket available: pass options.WebSocket (e.g. the ws package)",
      {
        field: "WebSocket",
      },
    );
  }
  const auth = options.webSocketAuth ?? (options.WebSocket === undefined ? "subprotocol" : "header");
  return auth === "header"
    ? (url) => new Ctor(url, [], { headers: { Authorization: `Bearer ${token}` } })
    : (url) => new Ctor(url, [`shiftlock.bearer.${token}`]);
}
