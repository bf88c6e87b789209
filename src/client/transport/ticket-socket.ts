/**
 * A WebSocket constructor that authenticates each connection with a fresh watch ticket
 * (docs/protocol.md#watch-tickets) instead of the bearer token: pass
 * `{ WebSocket: ticketSockets(transport), webSocketAuth: "header" }` to a client with watches
 * (the dashboard does). The token then travels only in `Authorization` headers of ordinary
 * requests, never in a URL or a subprotocol.
 *
 * Guarantees:
 * - Every connection asks for its own ticket (a ticket opens one upgrade), for exactly the
 *   path the socket opens, then opens `url` with `ticket=T` added to its query, with no
 *   subprotocol. The watch socket sees an ordinary WebSocket: `open`, `message`, `close`.
 * - A refused ticket request (or no answer) is a failed connection (`close` 1006, never
 *   `open`): the watch socket's probe then tells a refused token from a passing failure.
 * - `close()` before the socket exists abandons it: no upgrade is attempted afterwards.
 *
 * Does not: retry (the watch socket reconnects), or cache tickets (each is single-use).
 */
import { WATCH_TICKET_PARAM, issueWatchTicket } from "../../protocol/watch-ticket-routes.ts";
import type { HttpTransport } from "./http-transport.ts";
import type { WebSocketConstructor, WebSocketLike } from "./websocket.ts";

type Listener = (event: never) => void;

/** The `readyState` values (WHATWG). */
const CONNECTING = 0;
const CLOSED = 3;

/**
 * A constructor whose sockets open with tickets issued through `transport`, each through
 * `Native` (default: the global `WebSocket` of browsers, Workers and Node ≥ 22; on Node 20
 * pass the `ws` package's).
 */
export function ticketSockets(
  transport: HttpTransport,
  Native = (globalThis as { WebSocket?: new (url: string) => WebSocketLike }).WebSocket,
): WebSocketConstructor {
  return class TicketSocket implements WebSocketLike {
    private socket: WebSocketLike | undefined;
    private closed = false;
    private readonly listeners = new Map<string, Listener[]>();

    constructor(url: string) {
      void this.connect(url);
    }

    get readyState(): number {
      return this.socket?.readyState ?? (this.closed ? CLOSED : CONNECTING);
    }

    send(data: string): void {
      if (this.socket === undefined) throw new Error("WebSocket is not open");
      this.socket.send(data);
    }

    close(code?: number, reason?: string): void {
      if (this.socket !== undefined) return this.socket.close(code, reason);
      if (this.closed) return;
      this.closed = true;
      this.emit("close", { code: 1000, reason: reason ?? "" });
    }

    addEventListener(type: string, listener: Listener): void {
      this.listeners.set(type, [...(this.listeners.get(type) ?? []), listener]);
    }

    private emit(type: string, event: unknown): void {
      for (const listener of this.listeners.get(type) ?? []) (listener as (e: unknown) => void)(event);
    }

    private async connect(url: string): Promise<void> {
      const target = new URL(url);
      let ticket: string;
      try {
        if (Native === undefined) throw new Error("no WebSocket in this runtime");
        ({ ticket } = await transport.call(issueWatchTicket, { body: { path: target.pathname } }));
      } catch {
        if (this.closed) return;
        this.closed = true;
        this.emit("error", {});
        this.emit("close", { code: 1006, reason: "no watch ticket" });
        return;
      }
      if (this.closed) return;
      target.searchParams.set(WATCH_TICKET_PARAM, ticket);
      const socket = new Native(target.toString());
      this.socket = socket;
      for (const type of ["open", "message", "close", "error"] as const) {
        socket.addEventListener(type as "message", (event) => this.emit(type, event));
      }
    }
  };
}
