// The example of docs/coord-client.md, run against the real server: a writer publishing
// roots under the lease while a reader follows the watch.
import { expect, inject, it } from "vitest";
import WebSocket from "ws";
import { HttpCoordinator } from "../../src/client/index.ts";

it("docs/coord-client.md example: writer publishes, reader follows", async () => {
  const seen: unknown[] = [];
  // --- from the docs (baseUrl and namespace adapted) ---
  const coord = new HttpCoordinator({
    baseUrl: inject("serverUrl"),
    token: "dev-token",
    namespace: `demo-${crypto.randomUUID()}`,
    WebSocket,
  });
  const store = { volumeId: "vol-1", objectStoreId: "objects" };

  // Reader: a baseline, then every change after it.
  const base = await coord.snapshot({ ...store, participantId: "reader" });
  const watch = await coord.watch({ ...store, participantId: "reader" }, base.generation);
  const following = (async () => {
    for await (const event of watch) {
      if (event.rootChanged !== undefined) seen.push(event.rootChanged);
      if (event.generation >= base.generation + 3n) break;
    }
  })();

  // Writer: take the lease, publish three roots with compare-and-swap, release on scope exit.
  {
    await using lease = await coord.waitAcquireWriteLease(
      { ...store, participantId: "writer" },
      { signal: AbortSignal.timeout(10_000) },
    );
    let snap = await lease.refresh();
    for (let i = 1; i <= 3; i++) {
      lease.signal.throwIfAborted(); // stop writing the moment the lease is lost
      snap = await lease.publish({
        expectedGeneration: snap.generation,
        root: { version: i, epoch: `${lease.epoch}` },
      });
    }
  }
  await following;
  // --- end of the example ---
  expect(seen).toEqual([
    { version: 1, epoch: "1" },
    { version: 2, epoch: "1" },
    { version: 3, epoch: "1" },
  ]);
  expect((await coord.snapshot({ ...store, participantId: "reader" })).generation).toBe(3n);
});
