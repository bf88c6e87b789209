// HttpCoordinator's requests against a scripted fetch: routes and encoding, bodies,
// busy-as-value, chunked unbounded waits, retries of transient failures.
import { describe, expect, it } from "vitest";
import { ManualClock, flushMicrotasks } from "../../src/core/clock.ts";
import { hasCode } from "../../src/protocol/errors.ts";
import { HttpCoordinator } from "../../src/client/coord/coord-http.ts";
import { isScopeEmpty } from "../../src/client/coord/coord-scope.ts";
import type { Scope } from "../../src/client/coord/coord-types.ts";
import { CAPABILITY, envelope, fakeFetch, json, type FetchCall } from "./coord-client-fakes.ts";

const scope: Scope = { volumeId: "vol/1", objectStoreId: "store é", participantId: "p" };
const BASE = "http://svc.test/v1/ns/ns/volumes/vol%2F1/stores/store%20%C3%A9";
const lease = (epoch: string) => ({ leaseId: "L1", epoch, participantId: "p", expiresAtMs: 5 });
const snap = (generation: string, root: unknown = null) => ({
  volumeId: "vol/1",
  objectStoreId: "store é",
  generation,
  root,
});

function setup(respond: (call: FetchCall) => Response | Promise<Response>) {
  const clock = new ManualClock();
  const { fetch, calls } = fakeFetch(respond);
  const coord = new HttpCoordinator({ baseUrl: "http://svc.test/", token: "tok", namespace: "ns", fetch, clock });
  return { clock, calls, coord };
}

describe("HttpCoordinator requests", () => {
  it("addresses scopes with percent-encoded names and the bearer token", async () => {
    const { calls, coord } = setup(() => json(200, { ...CAPABILITY, generation: "18446744073709551615" }));
    const cap = await coord.capability(scope);
    expect(cap.generation).toBe(18446744073709551615n);
    expect(calls[0]).toMatchObject({ method: "GET", url: `${BASE}/capability` });
    expect(calls[0]!.headers["Authorization"]).toBe("Bearer tok");
    await coord.capability({ volumeId: "v", objectStoreId: "s", key: "k/1", participantId: "" });
    expect(calls[1]!.url).toBe("http://svc.test/v1/ns/ns/volumes/v/stores/s/keys/k%2F1/capability");
    await coord.capability({ volumeId: "v", key: "k", participantId: "" });
    expect(calls[2]!.url).toBe("http://svc.test/v1/ns/ns/volumes/v/keys/k/capability");
  });

  it("rejects a scope-empty or badly named scope before any request", async () => {
    const { calls, coord } = setup(() => json(200, CAPABILITY));
    await expect(coord.snapshot({ volumeId: "v", participantId: "p" })).rejects.toSatisfy(isScopeEmpty);
    await expect(coord.snapshot({ volumeId: "v\u0000", objectStoreId: "o", participantId: "p" })).rejects.toMatchObject(
      {
        code: "invalid_request",
        details: { field: "volumeId" },
      },
    );
    expect(calls).toHaveLength(0);
  });

  it("try: 201 is a lease with a bigint epoch, 409 lease_held is acquired:false", async () => {
    let busy = false;
    const { calls, coord } = setup((call) => {
      if (call.method === "DELETE") return new Response(null, { status: 204 });
      return busy ? envelope(409, "lease_held") : json(201, { lease: lease("42") });
    });
    const res = await coord.tryAcquireWriteLease(scope, { ttlMs: 3_000 });
    expect(res.acquired).toBe(true);
    expect(res.lease?.epoch).toBe(42n);
    expect(calls[0]).toMatchObject({
      method: "POST",
      url: `${BASE}/leases`,
      body: { participantId: "p", ttlMs: 3_000 },
    });
    busy = true;
    expect(await coord.tryAcquireWriteLease(scope)).toEqual({ acquired: false, lease: undefined, holder: "" });
    expect(calls[1]!.body).toEqual({ participantId: "p", ttlMs: 15_000 });
    await res.lease?.release();
    expect(calls[2]).toMatchObject({ method: "DELETE", url: `${BASE}/leases/L1` });
  });

  it("publish sends counters as strings and the prefix as base64; absent root is omitted", async () => {
    const { calls, coord } = setup((call) => {
      if (call.url.endsWith("/leases")) return json(201, { lease: lease("1") });
      if (call.url.endsWith("/publish")) return json(200, snap("9", "r"));
      return new Response(null, { status: 204 });
    });
    const { lease: held } = await coord.tryAcquireWriteLease(scope);
    const after = await held!.publish({
      generation: 9n,
      expectedGeneration: 2n,
      keyPrefixChanged: new TextEncoder().encode("world-head/"),
    });
    expect(after).toEqual({ ...snap("9", "r"), generation: 9n });
    expect(calls[1]).toMatchObject({
      url: `${BASE}/leases/L1/publish`,
      body: { generation: "9", expectedGeneration: "2", keyPrefixChanged: btoa("world-head/") },
    });
    expect(calls[1]!.body).not.toHaveProperty("root");
    await held!.release();
  });

  it("wait with waitMs is one queued request; lease_held when it passes", async () => {
    const { calls, coord } = setup(() => envelope(409, "lease_held"));
    await expect(coord.waitAcquireWriteLease(scope, { waitMs: 250 })).rejects.toSatisfy((e) =>
      hasCode(e, "lease_held"),
    );
    expect(calls).toHaveLength(1);
    expect(calls[0]!.body).toEqual({ participantId: "p", ttlMs: 15_000, waitMs: 250, waiterId: expect.any(String) });
  });

  it("an unbounded wait re-queues after each chunk and retries failures, withdrawing each failed wait", async () => {
    let n = 0;
    const { clock, calls, coord } = setup((call) => {
      if (call.method === "DELETE") return new Response(null, { status: 204 });
      n++;
      if (n === 1) return envelope(409, "lease_held");
      if (n === 2) throw new TypeError("fetch failed");
      if (n === 3) return envelope(503, "overloaded");
      return json(201, { lease: lease("3") });
    });
    const pending = coord.waitAcquireWriteLease(scope);
    for (let i = 0; i < 100 && n < 4; i++) {
      await flushMicrotasks();
      await clock.advance(100);
    }
    const held = await pending;
    expect(held.epoch).toBe(3n);
    const posts = calls.filter((c) => c.method === "POST");
    const bodies = posts.map((c) => c.body as { waitMs: number; waiterId: string });
    expect(bodies.map((b) => b.waitMs)).toEqual([60_000, 60_000, 60_000, 60_000]);
    expect(new Set(bodies.map((b) => b.waiterId)).size).toBe(4); // a fresh id per request
    // The two failed requests (not the lease_held one) were withdrawn by their waiter id.
    const deletes = calls.filter((c) => c.method === "DELETE").map((c) => c.url);
    expect(deletes).toEqual([`${BASE}/leases/${bodies[1]!.waiterId}`, `${BASE}/leases/${bodies[2]!.waiterId}`]);
    await held.release({ signal: AbortSignal.abort() });
  });

  it("aborting a wait aborts the request, withdraws the wait by its id, then rejects with the reason", async () => {
    const { calls, coord } = setup((call) =>
      call.method === "DELETE"
        ? new Response(null, { status: 204 })
        : new Promise<Response>((_, reject) =>
            call.signal?.addEventListener("abort", () => reject(call.signal?.reason as Error)),
          ),
    );
    const ctl = new AbortController();
    const pending = coord.waitAcquireWriteLease(scope, { signal: ctl.signal });
    await flushMicrotasks();
    ctl.abort(new Error("gone"));
    await expect(pending).rejects.toThrow("gone");
    expect(calls[0]!.signal?.aborted).toBe(true);
    const waiterId = (calls[0]!.body as { waiterId: string }).waiterId;
    expect(calls[1]).toMatchObject({ method: "DELETE", url: `${BASE}/leases/${waiterId}` });
    expect(calls[1]!.signal).not.toBe(ctl.signal); // the cancel is not bound to the caller's signal
  });

  it("a grant that arrives after a real wait is confirmed by an immediate keepalive", async () => {
    let grant: ((r: Response) => void) | undefined;
    const { clock, calls, coord } = setup((call) => {
      if (call.url.endsWith("/keepalive")) return json(200, { lease: lease("2"), wantLock: false });
      if (call.method === "DELETE") return new Response(null, { status: 204 });
      return new Promise<Response>((resolve) => (grant = resolve));
    });
    const pending = coord.waitAcquireWriteLease(scope, { ttlMs: 3_000 });
    await flushMicrotasks();
    await clock.advance(5_000); // queued for longer than the ttl
    grant!(json(201, { lease: lease("2") }));
    const held = await pending;
    await flushMicrotasks();
    // Counted from the answer's arrival, not from the send 5 s ago (which would be a loss).
    expect(held.signal.aborted).toBe(false);
    expect(calls.map((c) => c.url.split("/").at(-1))).toEqual(["leases", "keepalive"]);
    await held.release();
  });

  it("keyed snapshot is unsupported locally; server refusals keep their code", async () => {
    const { calls, coord } = setup(() => envelope(403, "forbidden"));
    await expect(coord.snapshot({ volumeId: "v", key: "k", participantId: "" })).rejects.toSatisfy((e) =>
      hasCode(e, "unsupported"),
    );
    expect(calls).toHaveLength(0);
    await expect(coord.snapshot(scope)).rejects.toSatisfy((e) => hasCode(e, "forbidden"));
  });
});
