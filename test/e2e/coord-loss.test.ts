// Loss is declared before anyone else can be granted: a holder cut off from the server
// (every request fails) sees `done`/`signal` fire before a queued participant receives the
// lease, measured on one machine's clock against the real server.
import { expect, inject, it } from "vitest";
import WebSocket from "ws";
import { HttpCoordinator } from "../../src/client/coord/coord-http.ts";
import type { FetchLike } from "../../src/client/transport/http-transport.ts";
import { hasCode } from "../../src/protocol/errors.ts";

it("a partitioned holder declares loss before the next waiter is granted", async () => {
  const baseUrl = inject("serverUrl");
  const namespace = `loss-${crypto.randomUUID()}`;
  const scope = { volumeId: `vol-${crypto.randomUUID()}`, objectStoreId: "objects" };
  let severed = false;
  const partitionable: FetchLike = (input, init) =>
    severed ? Promise.reject(new TypeError("network partition")) : fetch(input, init);
  const holderSide = new HttpCoordinator({ baseUrl, token: "dev-token", namespace, fetch: partitionable, WebSocket });
  const otherSide = new HttpCoordinator({ baseUrl, token: "dev-token", namespace, WebSocket });

  const res = await holderSide.tryAcquireWriteLease({ ...scope, participantId: "holder" }, { ttlMs: 1_500 });
  if (!res.acquired) throw new Error("busy");
  const lease = res.lease;
  let lossAt = Number.POSITIVE_INFINITY;
  const lost = lease.done.then(() => (lossAt = performance.now()));

  let grantAt = Number.POSITIVE_INFINITY;
  const next = otherSide
    .waitAcquireWriteLease({ ...scope, participantId: "next" }, { waitMs: 20_000 })
    .then((l) => ((grantAt = performance.now()), l));
  await new Promise((r) => setTimeout(r, 200)); // the holder keeps it alive meanwhile
  severed = true;

  const granted = await next;
  await lost;
  expect(hasCode(lease.err, "lease_lost")).toBe(true);
  expect(lossAt).toBeLessThan(grantAt);
  console.log(`loss declared ${(grantAt - lossAt).toFixed(0)} ms before the next grant arrived`);
  expect(granted.epoch).toBe(lease.epoch + 1n);
  await lease.release(); // clean after loss, even while partitioned
  await granted.release();
}, 30_000);
