/**
 * A `WebSocket` constructor for the shiftlock client that connects through a service
 * binding. A Worker cannot `new WebSocket(url)` to another Worker of its account; it asks
 * the binding with `fetch(url, { headers: { Upgrade: "websocket" } })` and accepts the
 * socket of the answer. This class wraps that asynchronous handshake in the synchronous
 * constructor shape the client expects (`WebSocketLike`).
 *
 * Guarantees: `open` fires once the binding answered 101 and the socket is accepted;
 * messages and `close` are forwarded as they come; a refused handshake (any other status)
 * or a failed fetch fires `error`, then `close` with code 1006 and the status as the
 * reason, and the client's watch reconnects with backoff as for any lost socket. `close()`
 * before the handshake finished closes the socket as soon as it exists.
 * Does not: buffer `send()` before `open` (the client never sends earlier).
 */
import type { WebSocketConstructor, WebSocketLike } from "shiftlock/client";

type Listener = (event: never) => void;

/** A constructor whose sockets reach `service` (e.g. `env.SHIFTLOCK`). */
export function serviceWebSocket(service: Fetcher): WebSocketConstructor {
  return class ServiceWebSocket implements WebSocketLike {
    readyState = 0;
    #socket: WebSocket | undefined;
    #closeRequested: { code?: number; reason?: string } | undefined;
    readonly #listeners = new Map<string, Set<Listener>>();

    constructor(url: string, protocols?: string | string[], options?: { headers?: Record<string, string> }) {
      const headers = new Headers(options?.headers);
      headers.set("Upgrade", "websocket");
      const wanted = typeof protocols === "string" ? [protocols] : (protocols ?? []);
      if (wanted.length > 0) headers.set("Sec-WebSocket-Protocol", wanted.join(", "));
      service.fetch(url.replace(/^ws/, "http"), { headers }).then(
        (response) => this.#accept(response),
        (err: unknown) => this.#fail(String(err)),
      );
    }

    send(data: string): void {
      if (this.#socket === undefined || this.readyState !== 1) throw new Error("WebSocket is not open");
      this.#socket.send(data);
    }

    close(code?: number, reason?: string): void {
      if (this.readyState >= 2) return;
      this.readyState = 2;
      if (this.#socket === undefined)
        this.#closeRequested = { ...(code === undefined ? {} : { code }), ...(reason === undefined ? {} : { reason }) };
      else this.#socket.close(code, reason);
    }

    addEventListener(type: "open" | "error", listener: () => void): void;
    addEventListener(type: "message", listener: (event: { data: unknown }) => void): void;
    addEventListener(type: "close", listener: (event: { code: number; reason: string }) => void): void;
    addEventListener(type: string, listener: Listener): void {
      let set = this.#listeners.get(type);
      if (set === undefined) this.#listeners.set(type, (set = new Set()));
      set.add(listener);
    }

    #emit(type: string, event?: unknown): void {
      for (const listener of this.#listeners.get(type) ?? []) (listener as (event: unknown) => void)(event);
    }

    #accept(response: Response): void {
      const socket = response.webSocket;
      if (socket === null) {
        this.#fail(`handshake refused: HTTP ${response.status}`);
        return;
      }
      socket.accept();
      this.#socket = socket;
      socket.addEventListener("message", (event) => this.#emit("message", { data: event.data as unknown }));
      socket.addEventListener("error", () => this.#emit("error"));
      socket.addEventListener("close", (event) => {
        this.readyState = 3;
        this.#emit("close", { code: event.code, reason: event.reason });
      });
      if (this.#closeRequested !== undefined) {
        socket.close(this.#closeRequested.code ?? 1000, this.#closeRequested.reason);
        return;
      }
      this.readyState = 1;
      this.#emit("open");
    }

    #fail(reason: string): void {
      this.readyState = 3;
      this.#emit("error");
      this.#emit("close", { code: 1006, reason });
    }
  };
}
