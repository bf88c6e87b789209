/**
 * Opening a watch WebSocket: the constructor to use and how the bearer token travels.
 *
 * Guarantees: Workers, browsers and Node ≥ 22 have a global `WebSocket`; Node 20 does not,
 * so a constructor (the `ws` package's default export) can be injected, and without either
 * opening a watch fails with `invalid_request` (`field: "WebSocket"`) before any network
 * use. The token travels as an `Authorization` header when the constructor can send
 * headers (an injected one, `ws`); a browser cannot, so without an injected constructor
 * each connection first asks for a watch ticket (docs/protocol.md#watch-tickets: one
 * request with the token in its `Authorization` header) and opens the socket with
 * `?ticket=…`, so the long-lived token never travels in a URL or a subprotocol.
 * `webSocketAuth` overrides the choice; `"subprotocol"` sends `shiftlock.bearer.<token>`.
 *
 * Does not: read the socket (watch-socket.ts does).
 */
import type { Clock } from "../../core/clock.ts";
import { ShiftlockError } from "../../protocol/errors.ts";
import { WATCH_TICKET_PARAM, issueWatchTicket } from "../../protocol/watch-ticket-routes.ts";
import type { HttpTransport } from "./http-transport.ts";

/** The part of the WHATWG WebSocket the client uses (browsers, Workers, Node 22, `ws`). */
export interface WebSocketLike {
  readonly readyState: number;
  send(data: string): void;
  close(code?: number, reason?: string): void;
  /**
   * Drop the connection without a closing handshake (`ws` has it; browsers do not): used
   * once the server said its last word, so the client never waits on the server's close.
   */
  terminate?(): void;
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
   * How a watch authenticates its WebSocket handshake: an `Authorization` header (what `ws`
   * can send), a single-use watch ticket asked for just before (what browsers should use),
   * or the subprotocol `shiftlock.bearer.<token>`. Default: `"header"` when `WebSocket` is
   * injected, `"ticket"` otherwise.
   */
  webSocketAuth?: "header" | "ticket" | "subprotocol";
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

/** Opens an authenticated socket to a watch URL (asking for a ticket first, when tickets are used). */
export type SocketOpener = (url: string, signal?: AbortSignal) => WebSocketLike | Promise<WebSocketLike>;

/**
 * A function that opens an authenticated socket to a URL. Throws `invalid_request` when no
 * WebSocket constructor is available.
 */
export function socketOpener(options: WatchConnectionOptions, transport: HttpTransport): SocketOpener {
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
  const auth = options.webSocketAuth ?? (options.WebSocket === undefined ? "ticket" : "header");
  const token = transport.bearerToken();
  if (auth === "header") return (url) => new Ctor(url, [], { headers: { Authorization: `Bearer ${token}` } });
  if (auth === "subprotocol") return (url) => new Ctor(url, [`shiftlock.bearer.${token}`]);
  // The service's own path: the URL's, without the base URL's path prefix.
  const prefix = new URL(transport.baseUrl).pathname.replace(/\/+$/, "");
  return async (url, signal) => {
    const target = new URL(url);
    const path = target.pathname.startsWith(prefix) ? target.pathname.slice(prefix.length) : target.pathname;
    const { ticket } = await transport.call(issueWatchTicket, { body: { path } }, signal);
    target.searchParams.set(WATCH_TICKET_PARAM, ticket);
    return new Ctor(target.toString());
  };
}
