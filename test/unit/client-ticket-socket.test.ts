/**
 * `ticketSockets`: each connection asks for its own watch ticket for exactly the path it
 * opens, then opens the URL with `?ticket=` and no subprotocol; a refused ticket request is a
 * failed connection; closing before the ticket arrived opens nothing.
 */
import { describe, expect, it } from "vitest";
import { HttpTransport, type FetchLike } from "../../src/client/transport/http-transport.ts";
import { ticketSockets } from "../../src/client/transport/ticket-socket.ts";
import type { WebSocketLike } from "../../src/client/transport/websocket.ts";
import { flushMicrotasks } from "../../src/core/clock.ts";
import { errorEnvelope } from "../../src/protocol/errors.ts";

class FakeSocket implements WebSocketLike {
  static opened: FakeSocket[] = [];
  readyState = 0;
  constructor(
    readonly url: string,
    readonly protocols?: unknown,
  ) {
    FakeSocket.opened.push(this);
  }
  send(): void {}
  close(): void {}
  addEventListener(): void {}
}

function transport(answer: (body: unknown) => Response, asked: unknown[]): HttpTransport {
  const fetch: FetchLike = (_url, init) => {
    const body: unknown = JSON.parse(init.body as string);
    asked.push(body);
    return Promise.resolve(answer(body));
  };
  return new HttpTransport({ baseUrl: "https://locks.example", token: "secret-token", namespace: "ns", fetch });
}

const issued = (): Response =>
  new Response(JSON.stringify({ ticket: "v1.abc.def", expiresAtMs: 60_000 }), { status: 201 });

describe("ticketSockets", () => {
  it("asks one ticket per connection for the socket's path and opens it with ?ticket=, no subprotocol", async () => {
    FakeSocket.opened = [];
    const asked: unknown[] = [];
    const Ctor = ticketSockets(transport(issued, asked), FakeSocket);
    const url = "wss://locks.example/v1/ns/ns/claims/a%2Fb/watch?afterVersion=0";
    new Ctor(url);
    new Ctor(url);
    await flushMicrotasks();
    expect(asked).toEqual([{ path: "/v1/ns/ns/claims/a%2Fb/watch" }, { path: "/v1/ns/ns/claims/a%2Fb/watch" }]);
    expect(FakeSocket.opened.map((s) => s.url)).toEqual([`${url}&ticket=v1.abc.def`, `${url}&ticket=v1.abc.def`]);
    expect(FakeSocket.opened.every((s) => s.protocols === undefined && !s.url.includes("secret-token"))).toBe(true);
  });

  it("fails the connection (close 1006, never open) when the ticket is refused", async () => {
    FakeSocket.opened = [];
    const refused = (): Response => new Response(JSON.stringify(errorEnvelope("unauthorized")), { status: 401 });
    const socket = new (ticketSockets(transport(refused, []), FakeSocket))(
      "wss://locks.example/v1/ns/ns/claims/c/watch",
    );
    const seen: string[] = [];
    socket.addEventListener("open", () => seen.push("open"));
    socket.addEventListener("close", (event) => seen.push(`close ${event.code}`));
    await flushMicrotasks();
    expect(seen).toEqual(["close 1006"]);
    expect(socket.readyState).toBe(3);
    expect(FakeSocket.opened).toEqual([]);
  });

  it("opens nothing when closed before the ticket arrived", async () => {
    FakeSocket.opened = [];
    const socket = new (ticketSockets(transport(issued, []), FakeSocket))(
      "wss://locks.example/v1/ns/ns/claims/c/watch",
    );
    socket.close(1000, "client closed");
    await flushMicrotasks();
    expect(FakeSocket.opened).toEqual([]);
    expect(socket.readyState).toBe(3);
  });
});
