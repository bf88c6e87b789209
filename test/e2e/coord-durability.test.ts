// Coord state is durable: generation, root, last key prefix and the fencing epoch survive a
// full server restart on the same state directory (a private server, started the way
// `npm start` does).
import { afterAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { HttpCoordinator } from "../../src/client/coord/coord-http.ts";
import type { Scope } from "../../src/client/coord/coord-types.ts";
import { removeState, startServer, type RunningServer } from "./server.ts";

const running: RunningServer[] = [];
let stateDir: string | undefined;

afterAll(async () => {
  for (const s of running.splice(0)) await s.stop();
  if (stateDir !== undefined) removeState(stateDir);
});

const coordinator = (url: string, namespace: string): HttpCoordinator =>
  new HttpCoordinator({ baseUrl: url, token: "dev-token", namespace, WebSocket });

describe("coord durability across a server restart", () => {
  it("keeps generation, root, key prefix and epoch", async () => {
    const namespace = `durable-${crypto.randomUUID()}`;
    const scope: Scope = { volumeId: `vol-${crypto.randomUUID()}`, objectStoreId: "objects", participantId: "w" };
    const root = { rootRef: "bafy-1", bucketId: "bucket-a" };

    const first = await startServer();
    running.push(first);
    stateDir = first.stateDir;
    const before = coordinator(first.url, namespace);
    const res = await before.tryAcquireWriteLease(scope);
    if (!res.acquired) throw new Error("busy");
    await res.lease.publish({ root: { old: true } });
    const published = await res.lease.publish({ root, keyPrefixChanged: new TextEncoder().encode("world-head/") });
    expect(published.generation).toBe(2n);
    const epochBefore = res.lease.epoch;
    await res.lease.release();
    await first.stop();
    running.splice(running.indexOf(first), 1);

    const second = await startServer(first.stateDir);
    running.push(second);
    const after = coordinator(second.url, namespace);
    expect(await after.snapshot(scope)).toEqual({
      volumeId: scope.volumeId,
      objectStoreId: "objects",
      generation: 2n,
      root,
    });
    const watch = await after.watch({ ...scope, participantId: "r" }, 1n);
    const it = watch[Symbol.asyncIterator]();
    const next = await it.next();
    if (next.done === true) throw new Error("watch ended");
    const replayed = next.value;
    expect(replayed.generation).toBe(2n);
    expect(replayed.rootChanged).toEqual(root);
    expect(new TextDecoder().decode(replayed.keyPrefixChanged)).toBe("world-head/");
    watch.close();
    const again = await after.tryAcquireWriteLease(scope);
    if (!again.acquired) throw new Error("busy after restart");
    // The fencing epoch is never reused, across restarts too.
    expect(again.lease.epoch).toBe(epochBefore + 1n);
    expect((await again.lease.publish({})).generation).toBe(3n);
    await again.lease.release();
  }, 120_000);
});
