// Coord routes end to end through the Worker: capability, snapshot, lease lifecycle, publish
// rules, error codes, keyed scopes and auth.
import { exports } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { READ, acquire, call, del, get, post, uniqueScope } from "./coord-helpers.ts";

beforeAll(async () => {
  await exports.default.fetch("http://x/healthz");
}, 60_000);

describe("capability and snapshot", () => {
  it("reports an object-store scope with generations", async () => {
    const scope = uniqueScope();
    const res = await get(`${scope.url}/capability`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      supported: true,
      backend: "durable-object",
      volumeId: scope.volumeId,
      objectStoreId: scope.objectStoreId,
      generation: "0",
      generations: true,
      detectsLoss: true,
      fallbackReason: "",
    });
  });

  it("reports keyed scopes without generations", async () => {
    for (const scope of [uniqueScope({ key: "world-1", store: false }), uniqueScope({ key: "world-1" })]) {
      const res = await get(`${scope.url}/capability`);
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ supported: true, generations: false, generation: "0", detectsLoss: true });
      expect(res.body.objectStoreId).toBe(scope.objectStoreId);
    }
  });

  it("snapshot of a fresh scope is generation 0 with a null root", async () => {
    const scope = uniqueScope();
    const res = await get(`${scope.url}/snapshot`);
    expect(res).toMatchObject({
      status: 200,
      body: { volumeId: scope.volumeId, objectStoreId: scope.objectStoreId, generation: "0", root: null },
    });
  });
});

describe("lease lifecycle", () => {
  it("grants 201 with an unguessable id and epoch 1, then refuses a second try with lease_held", async () => {
    const scope = uniqueScope();
    const before = Date.now();
    const res = await post(`${scope.url}/leases`, { participantId: "a", ttlMs: 5_000 });
    expect(res.status).toBe(201);
    expect(res.body.lease).toMatchObject({ epoch: "1", participantId: "a" });
    expect(res.body.lease.leaseId).toMatch(/^[0-9a-f-]{36}$/);
    expect(res.body.lease.expiresAtMs).toBeGreaterThanOrEqual(before + 5_000);
    // Not re-entrant: the same participant is refused too.
    const again = await post(`${scope.url}/leases`, { participantId: "a" });
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe("lease_held");
    expect(again.body.error.holder).toBe("a"); // names who holds it
    await del(`${scope.url}/leases/${res.body.lease.leaseId}`);
  });

  it("keepalive extends and reports wantLock; unknown leases are 410 lease_lost", async () => {
    const scope = uniqueScope();
    const lease = await acquire(scope, "a", { ttlMs: 1_000 });
    const kept = await post(`${scope.url}/leases/${lease.leaseId}/keepalive`, { ttlMs: 60_000 });
    expect(kept.status).toBe(200);
    expect(kept.body.wantLock).toBe(false);
    expect(kept.body.lease.expiresAtMs).toBeGreaterThan(lease.expiresAtMs as number);
    expect(kept.body.lease).toMatchObject({ leaseId: lease.leaseId, epoch: "1", participantId: "a" });
    const lost = await post(`${scope.url}/leases/not-a-lease/keepalive`, {});
    expect(lost.status).toBe(410);
    expect(lost.body.error.code).toBe("lease_lost");
    await del(`${scope.url}/leases/${lease.leaseId}`);
  });

  it("release is 204 always: held, repeated, unknown; then refresh and publish are lease_lost", async () => {
    const scope = uniqueScope();
    const lease = await acquire(scope);
    expect((await del(`${scope.url}/leases/${lease.leaseId}`)).status).toBe(204);
    expect((await del(`${scope.url}/leases/${lease.leaseId}`)).status).toBe(204);
    expect((await del(`${scope.url}/leases/never-granted`)).status).toBe(204);
    expect((await post(`${scope.url}/leases/${lease.leaseId}/refresh`)).status).toBe(410);
    const pub = await post(`${scope.url}/leases/${lease.leaseId}/publish`, {});
    expect(pub.status).toBe(410);
    expect(pub.body.error.code).toBe("lease_lost");
    // The next grant has a new epoch.
    const next = await acquire(scope);
    expect(next.epoch).toBe("2");
    await del(`${scope.url}/leases/${next.leaseId}`);
  });

  it("validates bodies: ttl range, names, unknown fields", async () => {
    const scope = uniqueScope();
    for (const [body, field] of [
      [{ participantId: "a", ttlMs: 99 }, "ttlMs"],
      [{ participantId: "a", ttlMs: 86_400_001 }, "ttlMs"],
      [{ participantId: "" }, "participantId"],
      [{ participantId: "a", waitMs: -1 }, "waitMs"],
      [{ participantId: "a", extra: 1 }, "extra"],
    ] as const) {
      const res = await post(`${scope.url}/leases`, body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error).toMatchObject({ code: "invalid_request", field });
    }
  });
});

describe("publish", () => {
  it("advances the generation, stores root and prefix durably, and refresh returns them", async () => {
    const scope = uniqueScope();
    const lease = await acquire(scope);
    const base = `${scope.url}/leases/${lease.leaseId}`;
    const root = { bucketId: "bucket-a", rootRef: "abc" };
    const first = await post(`${base}/publish`, { root, keyPrefixChanged: "d29ybGQtaGVhZC8=" });
    expect(first).toMatchObject({ status: 200, body: { generation: "1", root } });
    const jump = await post(`${base}/publish`, { generation: "10" });
    expect(jump.body).toMatchObject({ generation: "10", root });
    const bump = await post(`${base}/publish`, { generation: "4" });
    expect(bump.body.generation).toBe("11");
    expect((await post(`${base}/refresh`)).body).toMatchObject({ generation: "11", root });
    expect((await get(`${scope.url}/snapshot`)).body).toMatchObject({ generation: "11", root });
    expect((await get(`${scope.url}/capability`)).body.generation).toBe("11");
    await del(base);
  });

  it("refuses a CAS mismatch with 409 stale_generation and accepts a match", async () => {
    const scope = uniqueScope();
    const lease = await acquire(scope);
    const base = `${scope.url}/leases/${lease.leaseId}`;
    await post(`${base}/publish`, {});
    const stale = await post(`${base}/publish`, { expectedGeneration: "0", root: "x" });
    expect(stale.status).toBe(409);
    expect(stale.body.error.code).toBe("stale_generation");
    expect((await get(`${scope.url}/snapshot`)).body).toMatchObject({ generation: "1", root: null });
    const ok = await post(`${base}/publish`, { expectedGeneration: "1", root: "x" });
    expect(ok.body).toMatchObject({ generation: "2", root: "x" });
    await del(base);
  });

  it("validates root size (16 KiB), base64 and counters", async () => {
    const scope = uniqueScope();
    const lease = await acquire(scope);
    const base = `${scope.url}/leases/${lease.leaseId}`;
    // JSON text of a string is its content plus two quotes.
    const fits = await post(`${base}/publish`, { root: "r".repeat(16 * 1024 - 2) });
    expect(fits.status).toBe(200);
    for (const [body, field] of [
      [{ root: "r".repeat(16 * 1024 - 1) }, "root"],
      [{ keyPrefixChanged: "not base64!" }, "keyPrefixChanged"],
      [{ generation: "007" }, "generation"],
      [{ expectedGeneration: "-1" }, "expectedGeneration"],
      [{ generation: "18446744073709551616" }, "generation"],
    ] as const) {
      const res = await post(`${base}/publish`, body);
      expect(res.status, JSON.stringify(body).slice(0, 80)).toBe(400);
      expect(res.body.error).toMatchObject({ code: "invalid_request", field });
    }
    expect((await get(`${scope.url}/snapshot`)).body.generation).toBe("1");
    await del(base);
  });
});

describe("keyed scopes", () => {
  it("exclude without colliding with other keys or the store scope, and refuse generation routes", async () => {
    const keyed = uniqueScope({ key: "world-1", store: false });
    const lease = await acquire(keyed, "first");
    expect(lease.epoch).toBe("1");
    expect((await post(`${keyed.url}/leases`, { participantId: "second" })).status).toBe(409);
    // Same volume, other key; same volume, a store scope; the store's own keyed scope.
    const base = `http://x/v1/ns/${keyed.ns}/volumes/${keyed.volumeId}`;
    for (const url of [`${base}/keys/world-2`, `${base}/stores/world-1`, `${base}/stores/s/keys/world-1`]) {
      const res = await post(`${url}/leases`, { participantId: "second" });
      expect(res.status, url).toBe(201);
      await del(`${url}/leases/${res.body.lease.leaseId}`);
    }
    for (const [method, path] of [
      ["GET", "/snapshot"],
      ["POST", `/leases/${lease.leaseId}/refresh`],
      ["POST", `/leases/${lease.leaseId}/publish`],
    ] as const) {
      const res = await call(method, `${keyed.url}${path}`);
      expect(res.status, path).toBe(400);
      expect(res.body.error.code).toBe("unsupported");
    }
    const watch = await exports.default.fetch(`${keyed.url}/watch`, {
      headers: { Upgrade: "websocket", Authorization: "Bearer test-read-all" },
    });
    expect(watch.status).toBe(400);
    expect((await watch.json<{ error: { code: string } }>()).error.code).toBe("unsupported");
    // Keepalive and release work on keyed leases.
    expect((await post(`${keyed.url}/leases/${lease.leaseId}/keepalive`, {})).status).toBe(200);
    expect((await del(`${keyed.url}/leases/${lease.leaseId}`)).status).toBe(204);
  });
});

describe("auth", () => {
  it("read tokens may GET but not take leases; no token is 401 before anything else", async () => {
    const scope = uniqueScope();
    expect((await get(`${scope.url}/capability`, READ)).status).toBe(200);
    const denied = await call("POST", `${scope.url}/leases`, { participantId: "a" }, READ);
    expect(denied.status).toBe(403);
    expect(denied.body.error.code).toBe("forbidden");
    expect((await call("DELETE", `${scope.url}/leases/x`, undefined, READ)).status).toBe(403);
    const anonymous = await exports.default.fetch(`${scope.url}/leases/x`, { method: "DELETE" });
    expect(anonymous.status).toBe(401);
    await anonymous.body?.cancel();
    const alpha = await call("POST", `${scope.url}/leases`, { participantId: "a" }, "test-write-alpha");
    expect(alpha.status).toBe(403);
  });
});
