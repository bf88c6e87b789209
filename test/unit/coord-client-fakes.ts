// Test doubles for the HTTP clients (coord, the lease channel): a scripted WebSocket and a scripted fetch.
import type { WebSocketConstructor, WebSocketLike } from "../../src/client/transport/websocket.ts";
import type { FetchLike } from "../../src/client/transport/http-transport.ts";

type Listener = (event: never) => void;

/** A WebSocket the test plays the server side of. */
export class FakeSocket implements WebSocketLike {
  readyState = 0;
  readonly sent: string[] = [];
  closedByClient: { code: number | undefined; reason: string | undefined } | undefined;
  private readonly listeners = new Map<string, Listener[]>();

  constructor(
    readonly url: string,
    readonly protocols: string | string[] | undefined,
    readonly options: { headers?: Record<string, string> } | undefined,
  ) {}

  addEventListener(type: string, listener: Listener): void {
    this.listeners.set(type, [...(this.listeners.get(type) ?? []), listener]);
  }

  send(data: string): void {
    this.sent.push(data);
  }

  close(code?: number, reason?: string): void {
    if (this.readyState === 3) return;
    this.closedByClient = { code, reason };
    this.finish(code ?? 1000);
  }

  /** Dropped by the client without a closing handshake (as `ws` can). */
  terminated = false;
  terminate(): void {
    if (this.readyState === 3) return;
    this.terminated = true;
    this.finish(1006);
  }

  // --- the server side ---
  open(): void {
    this.readyState = 1;
    this.emit("open", {});
  }

  message(value: unknown): void {
    this.emit("message", { data: JSON.stringify(value) });
  }

  drop(code = 1006): void {
    this.emit("error", {});
    this.finish(code);
  }

  private finish(code: number): void {
    this.readyState = 3;
    this.emit("close", { code, reason: "" });
  }

  private emit(type: string, event: unknown): void {
    for (const l of this.listeners.get(type) ?? []) (l as (e: unknown) => void)(event);
  }
}

/** A WebSocket constructor recording every socket it makes. */
export function fakeWebSocket(): { Ctor: WebSocketConstructor; sockets: FakeSocket[] } {
  const sockets: FakeSocket[] = [];
  class Ctor extends FakeSocket {
    constructor(url: string, protocols?: string | string[], options?: { headers?: Record<string, string> }) {
      super(url, protocols, options);
      sockets.push(this);
    }
  }
  return { Ctor, sockets };
}

export interface FetchCall {
  method: string;
  url: string;
  headers: Record<string, string>;
  body: unknown;
  signal: AbortSignal | undefined;
}

/** A fetch answering from `respond`; every call is recorded. */
export function fakeFetch(respond: (call: FetchCall) => Promise<Response> | Response): {
  fetch: FetchLike;
  calls: FetchCall[];
} {
  const calls: FetchCall[] = [];
  const fetch: FetchLike = async (input, init) => {
    const call: FetchCall = {
      method: init.method ?? "GET",
      url: input,
      headers: { ...(init.headers as Record<string, string>) },
      body: typeof init.body === "string" ? JSON.parse(init.body) : undefined,
      signal: init.signal ?? undefined,
    };
    calls.push(call);
    return respond(call);
  };
  return { fetch, calls };
}

export function json(status: number, body: unknown): Response {
  return new Response(body === undefined ? null : JSON.stringify(body), {
    status,
    headers: { "Content-Type": "application/json" },
  });
}

export function envelope(status: number, code: string): Response {
  return json(status, { error: { code, message: code } });
}

/** A wire event (counters as strings, prefix base64). */
export function wireEvent(generation: number, patch: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    type: "event",
    processId: "w",
    volumeId: "v",
    objectStoreId: "o",
    generation: String(generation),
    wantLock: false,
    unlocked: false,
    rootChanged: { g: generation },
    keyPrefixChanged: "",
    fallbackReason: "",
    ...patch,
  };
}

export const CAPABILITY = {
  supported: true,
  backend: "durable-object",
  volumeId: "v",
  objectStoreId: "o",
  generation: "0",
  generations: true,
  detectsLoss: true,
  fallbackReason: "",
};
