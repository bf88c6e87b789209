/* eslint-disable @typescript-eslint/no-unsafe-return -- watch messages are inspected loosely. */
// Real hibernation: the runtime evicts an idle object whose watch sockets stay open (after
// 10 s of inactivity, as in production), and a fresh instance wakes for the next message or
// mutation. The per-socket attachment and the ack accounting must survive it, and the socket
// must go on receiving every event exactly once.
import { exports } from "cloudflare:workers";
import { runInDurableObject } from "cloudflare:test";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import type { ScopeObject } from "./test-entry.ts";
import { WATCH_TAG as SCOPE_WATCH_TAG } from "../../src/coord/watch.ts";
import { WATCH_TAG as CLAIM_WATCH_TAG } from "../../src/claims/watch.ts";
import {
  claimStub,
  claimUrl,
  clearTrackedAlarms,
  openWatch as openClaimWatch,
  post,
  track,
  unique,
} from "./claims-helpers.ts";
import { acquire, del, openWatch, post as coordPost, scopeStub, uniqueScope } from "./coord-helpers.ts";
import { ack, hibernate } from "./object-helpers.ts";

beforeAll(async () => {
  await exports.default.fetch("http://x/healthz");
}, 60_000);
afterEach(clearTrackedAlarms);

/** Each socket's tags and attachment, read by whatever instance is current. */
const sockets = (stub: DurableObjectStub, tag: string) =>
  runInDurableObject(stub, (_o: object, state) =>
    state.getWebSockets(tag).map((ws) => ({ tags: state.getTags(ws), attachment: ws.deserializeAttachment() })),
  );

describe.concurrent("hibernation", { timeout: 60_000 }, () => {
  it("claims: keeps per-socket state in a versioned attachment that survives hibernation", async () => {
    const ns = unique("ns");
    const claim = unique();
    track(ns, claim);
    const stub = claimStub(ns, claim);
    await post(claimUrl(ns, claim, "/acquire"), { generationId: "g1", ttlMs: 60_000 });
    const w = await openClaimWatch(ns, claim);
    await w.next(); // snapshot at version 1
    await post(claimUrl(ns, claim, "/release"), { generationId: "g1", token: "1" });
    await w.next(); // released, version 2
    const before = await sockets(stub, CLAIM_WATCH_TAG);
    expect(before).toEqual([{ tags: ["watch"], attachment: { v: 1, lastSent: "2", unacked: 1 } }]);

    await hibernate(stub);
    expect(await sockets(stub, CLAIM_WATCH_TAG)).toEqual(before);
    // The woken instance settles the ack against the attachment, then delivers the next event once.
    await ack(w, { type: "ack", version: "2" });
    expect(await sockets(stub, CLAIM_WATCH_TAG)).toEqual([
      { tags: ["watch"], attachment: { v: 1, lastSent: "2", unacked: 0 } },
    ]);
    await post(claimUrl(ns, claim, "/acquire"), { generationId: "g2", ttlMs: 60_000 });
    await w.until((m) => m.some((x) => x.type === "event" && x.claim.version === "3"));
    const versions = w.messages.filter((m) => m.type === "event").map((m) => m.claim.version);
    expect(versions).toEqual(["2", "3"]);
    expect((await sockets(stub, CLAIM_WATCH_TAG))[0]?.attachment).toEqual({ v: 1, lastSent: "3", unacked: 1 });
    w.ws.close(1000);
  });

  it("coord: the unacked count survives hibernation and acks after waking subtract from it", async () => {
    const scope = uniqueScope();
    const stub = scopeStub(scope);
    const lease = await acquire(scope, "writer");
    const w = await openWatch(scope);
    await w.next(); // ready
    for (const participantId of ["p1", "p2", "p3"]) await coordPost(`${scope.url}/leases`, { participantId });
    await w.until((m) => m.filter((x) => x.type === "event").length === 3);
    const before = await sockets(stub, SCOPE_WATCH_TAG);
    expect(before).toEqual([{ tags: [SCOPE_WATCH_TAG], attachment: { v: 1, unacked: 3 } }]);

    await hibernate(stub);
    expect(await sockets(stub, SCOPE_WATCH_TAG)).toEqual(before);
    await ack(w, { type: "ack", count: 2 });
    expect((await sockets(stub, SCOPE_WATCH_TAG))[0]?.attachment).toEqual({ v: 1, unacked: 1 });
    await del(`${scope.url}/leases/${lease.leaseId}`);
    await w.until((m) => m.some((x) => x.unlocked === true));
    expect(w.messages.filter((m) => m.type === "event")).toHaveLength(4);
    expect((await sockets(stub, SCOPE_WATCH_TAG))[0]?.attachment).toEqual({ v: 1, unacked: 2 });
    w.ws.close(1000);
    await runInDurableObject(stub, (_o: ScopeObject, state) => state.storage.deleteAlarm());
  });
});
