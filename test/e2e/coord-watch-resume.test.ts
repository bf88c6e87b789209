// A watch over a real connection that drops (terminated under it) reconnects by itself and
// resumes from the last generation it saw: publishes made while it was down arrive once, in
// order, then live events continue.
import { expect, inject, it } from "vitest";
import WebSocket from "ws";
import { HttpCoordinator } from "../../src/client/coord/coord-http.ts";
import type { WebSocketConstructor } from "../../src/client/transport/websocket.ts";
import type { CoordEvent } from "../../src/client/coord/coord-types.ts";

it("a dropped watch resumes without gaps or duplicates", async () => {
  const sockets: WebSocket[] = [];
  // Records every socket so the test can cut one abruptly (no close handshake: a real drop).
  class Recording extends WebSocket {
    constructor(url: string, protocols?: string | string[], options?: WebSocket.ClientOptions) {
      super(url, protocols, options);
      sockets.push(this);
    }
  }
  const namespace = `resume-${crypto.randomUUID()}`;
  const make = (Ctor: WebSocketConstructor): HttpCoordinator =>
    new HttpCoordinator({
      baseUrl: inject("serverUrl"),
      token: "dev-token",
      namespace,
      WebSocket: Ctor,
      watchReconnectMinMs: 50,
    });
  const coord = make(Recording);
  const scope = { volumeId: `vol-${crypto.randomUUID()}`, objectStoreId: "objects", participantId: "p" };

  const watch = await coord.watch(scope, 0n);
  const it = watch[Symbol.asyncIterator]();
  const next = async (): Promise<CoordEvent> => {
    const r = await it.next();
    if (r.done === true) throw new Error("watch ended");
    return r.value;
  };
  const res = await make(WebSocket).tryAcquireWriteLease(scope);
  if (!res.acquired) throw new Error("busy");
  const lease = res.lease;

  await lease.publish({ root: 1 });
  expect((await next()).generation).toBe(1n);
  sockets[0]!.terminate(); // the connection dies under the watch
  await lease.publish({ root: 2 });
  await lease.publish({ root: 3 });
  // The reconnect first stands in for wantLock/unlocked events it cannot replay (docs/coord-client.md).
  expect(await next()).toMatchObject({ resumed: true, wantLock: true, unlocked: true, generation: 1n });
  const missed = [await next(), await next()];
  expect(missed.map((e) => [e.generation, e.rootChanged])).toEqual([
    [2n, 2],
    [3n, 3],
  ]);
  expect(sockets.length).toBeGreaterThanOrEqual(2);
  expect(sockets.at(-1)!.url).toMatch(/afterGeneration=1$/);
  await lease.publish({ root: 4 });
  expect((await next()).generation).toBe(4n);
  expect(watch.afterGeneration).toBe(4n);
  watch.close();
  await lease.release();
}, 30_000);
