// Generation routes end to end through the Worker: register, get, patch, namespace isolation
// and storage (the record lives in the generation's own Durable Object).
import { exports } from "cloudflare:workers";
import { testEnv } from "./test-env.ts";
import { runInDurableObject } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import { objectName } from "../../src/durable/object-names.ts";
import { systemClock } from "../../src/core/clock.ts";
import type { GenerationObject } from "./test-entry.ts";
import { restartObject } from "./object-helpers.ts";

// The first request loads the Worker module, which can take seconds on a busy machine.
beforeAll(async () => {
  await exports.default.fetch("http://x/healthz");
}, 60_000);

const WRITE = { Authorization: "Bearer test-write-all" };

function call(method: string, path: string, body?: unknown, headers: Record<string, string> = WRITE) {
  const init: RequestInit = { method, headers: { ...headers, "Content-Type": "application/json" } };
  if (body !== undefined) init.body = JSON.stringify(body);
  return exports.default.fetch(`http://x${path}`, init);
}

function fresh() {
  return { ns: `ns-${crypto.randomUUID()}`, id: `gen-${crypto.randomUUID()}` };
}

interface GenerationBody {
  generation: {
    id: string;
    service: string;
    instanceId: string;
    state: string;
    startedAtMs: number;
    updatedAtMs: number;
    reason: string;
  };
}

describe("POST /v1/ns/{ns}/generations", () => {
  it("registers a generation in joining with 200 and the record", async () => {
    const { ns, id } = fresh();
    const before = systemClock.nowMs();
    const res = await call("POST", `/v1/ns/${ns}/generations`, { id, service: "api", instanceId: "i-1" });
    expect(res.status).toBe(200);
    const { generation } = await res.json<GenerationBody>();
    expect(generation).toMatchObject({ id, service: "api", instanceId: "i-1", state: "joining", reason: "registered" });
    expect(generation.startedAtMs).toBeGreaterThanOrEqual(before);
    expect(generation.updatedAtMs).toBe(generation.startedAtMs);
  });

  it("answers a repeat with the current record and never resets its state", async () => {
    const { ns, id } = fresh();
    const body = { id, service: "api", instanceId: "i-1" };
    await call("POST", `/v1/ns/${ns}/generations`, body);
    const patched = await call("PATCH", `/v1/ns/${ns}/generations/${id}`, { state: "standby", reason: "ready" });
    const current = (await patched.json<GenerationBody>()).generation;
    const again = await call("POST", `/v1/ns/${ns}/generations`, body);
    expect(again.status).toBe(200);
    expect((await again.json<GenerationBody>()).generation).toEqual(current);
  });

  it("refuses the same id from another service or instance with generation_exists", async () => {
    const { ns, id } = fresh();
    await call("POST", `/v1/ns/${ns}/generations`, { id, service: "api", instanceId: "i-1" });
    for (const other of [
      { id, service: "api", instanceId: "i-2" },
      { id, service: "web", instanceId: "i-1" },
    ]) {
      const res = await call("POST", `/v1/ns/${ns}/generations`, other);
      expect(res.status).toBe(409);
      expect(await res.json()).toMatchObject({
        error: { code: "generation_exists", generation: { id, service: "api", instanceId: "i-1" } },
      });
    }
  });

  it("has exactly one winner when two instances race for one id", async () => {
    const { ns, id } = fresh();
    const results = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        call("POST", `/v1/ns/${ns}/generations`, { id, service: "api", instanceId: `i-${i}` }),
      ),
    );
    const statuses = results.map((r) => r.status).sort();
    expect(statuses.filter((s) => s === 200)).toHaveLength(1);
    expect(statuses.filter((s) => s === 409)).toHaveLength(7);
  });

  it("validates the body before touching storage", async () => {
    const { ns, id } = fresh();
    const cases: [unknown, string][] = [
      [{ id, service: "api" }, "instanceId"],
      [{ id, service: "api", instanceId: "i", extra: 1 }, "extra"],
      [{ id: "", service: "api", instanceId: "i" }, "id"],
      [{ id: "a\u0007b", service: "api", instanceId: "i" }, "id"],
      [{ id, service: "x".repeat(257), instanceId: "i" }, "service"],
      [{ id, service: 5, instanceId: "i" }, "service"],
    ];
    for (const [body, field] of cases) {
      const res = await call("POST", `/v1/ns/${ns}/generations`, body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(await res.json()).toMatchObject({ error: { code: "invalid_request", field } });
    }
    expect((await call("GET", `/v1/ns/${ns}/generations/${id}`)).status).toBe(404);
  });
});

describe("GET /v1/ns/{ns}/generations/{id}", () => {
  it("returns 404 generation_not_found and creates nothing", async () => {
    const { ns, id } = fresh();
    const res = await call("GET", `/v1/ns/${ns}/generations/${id}`);
    expect(res.status).toBe(404);
    expect(await res.json()).toMatchObject({ error: { code: "generation_not_found" } });
    const stub = testEnv.GENERATIONS.getByName(objectName(ns, "generation", id));
    await runInDurableObject(stub, (_instance: GenerationObject, state) => {
      const tables = state.storage.sql
        .exec("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE '\\_%' ESCAPE '\\'")
        .toArray();
      expect(tables).toEqual([]);
    });
  });

  it("reads the record with a read-only token and decodes ids with a slash", async () => {
    const { ns } = fresh();
    const id = `svc/${crypto.randomUUID()} é`;
    await call("POST", `/v1/ns/${ns}/generations`, { id, service: "api", instanceId: "i-1" });
    const res = await call("GET", `/v1/ns/${ns}/generations/${encodeURIComponent(id)}`, undefined, {
      Authorization: "Bearer test-read-all",
    });
    expect(res.status).toBe(200);
    expect((await res.json<GenerationBody>()).generation.id).toBe(id);
  });

  it("keeps namespaces apart", async () => {
    const { ns, id } = fresh();
    await call("POST", `/v1/ns/${ns}/generations`, { id, service: "api", instanceId: "i-1" });
    expect((await call("GET", `/v1/ns/${ns}-other/generations/${id}`)).status).toBe(404);
    const other = await call("POST", `/v1/ns/${ns}-other/generations`, { id, service: "web", instanceId: "i-9" });
    expect(other.status).toBe(200);
  });
});

describe("PATCH /v1/ns/{ns}/generations/{id}", () => {
  it("walks a full lifecycle and persists every step", async () => {
    const { ns, id } = fresh();
    await call("POST", `/v1/ns/${ns}/generations`, { id, service: "api", instanceId: "i-1" });
    for (const state of ["standby", "preparing", "active", "draining", "transferring", "retired"]) {
      const res = await call("PATCH", `/v1/ns/${ns}/generations/${id}`, { state, reason: `to-${state}` });
      expect(res.status).toBe(200);
      expect((await res.json<GenerationBody>()).generation).toMatchObject({ state, reason: `to-${state}` });
    }
    const read = await call("GET", `/v1/ns/${ns}/generations/${id}`);
    expect((await read.json<GenerationBody>()).generation).toMatchObject({ state: "retired", reason: "to-retired" });
  });

  it("refuses an illegal move with invalid_state naming from and to, and changes nothing", async () => {
    const { ns, id } = fresh();
    await call("POST", `/v1/ns/${ns}/generations`, { id, service: "api", instanceId: "i-1" });
    const res = await call("PATCH", `/v1/ns/${ns}/generations/${id}`, { state: "draining" });
    expect(res.status).toBe(409);
    expect(await res.json()).toMatchObject({ error: { code: "invalid_state", from: "joining", to: "draining" } });
    const read = await call("GET", `/v1/ns/${ns}/generations/${id}`);
    expect((await read.json<GenerationBody>()).generation).toMatchObject({ state: "joining", reason: "registered" });
  });

  it("treats retired as final but accepts a retried retire", async () => {
    const { ns, id } = fresh();
    await call("POST", `/v1/ns/${ns}/generations`, { id, service: "api", instanceId: "i-1" });
    await call("PATCH", `/v1/ns/${ns}/generations/${id}`, { state: "retired", reason: "closed" });
    const retry = await call("PATCH", `/v1/ns/${ns}/generations/${id}`, { state: "retired" });
    expect(retry.status).toBe(200);
    expect((await retry.json<GenerationBody>()).generation).toMatchObject({ state: "retired", reason: "closed" });
    const back = await call("PATCH", `/v1/ns/${ns}/generations/${id}`, { state: "active" });
    expect(back.status).toBe(409);
    expect(await back.json()).toMatchObject({ error: { code: "invalid_state", from: "retired", to: "active" } });
  });

  it("answers generation_not_found for an unknown id", async () => {
    const { ns, id } = fresh();
    const res = await call("PATCH", `/v1/ns/${ns}/generations/${id}`, { state: "standby" });
    expect(res.status).toBe(404);
    expect(await res.json()).toMatchObject({ error: { code: "generation_not_found" } });
    expect((await call("GET", `/v1/ns/${ns}/generations/${id}`)).status).toBe(404);
  });

  it("validates state and reason", async () => {
    const { ns, id } = fresh();
    await call("POST", `/v1/ns/${ns}/generations`, { id, service: "api", instanceId: "i-1" });
    for (const [body, field] of [
      [{ state: "sleeping" }, "state"],
      [{}, "state"],
      [{ state: "standby", reason: 7 }, "reason"],
      [{ state: "standby", reason: "x".repeat(1025) }, "reason"],
      [{ state: "standby", extra: true }, "extra"],
    ] as const) {
      const res = await call("PATCH", `/v1/ns/${ns}/generations/${id}`, body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(await res.json()).toMatchObject({ error: { code: "invalid_request", field } });
    }
  });

  it("reads a reason back exactly as it accepted it: a lone surrogate is refused and stores nothing", async () => {
    // Found by the malformed-request fuzzing at 10,000 cases: "x\udfffy" was accepted and
    // answered as sent, but stored as U+FFFD, so the next read of the same version differed.
    const { ns, id } = fresh();
    await call("POST", `/v1/ns/${ns}/generations`, { id, service: "api", instanceId: "i-1" });
    const kept = "drained 🚀 — ünïcode ok";
    const accepted = await call("PATCH", `/v1/ns/${ns}/generations/${id}`, { state: "standby", reason: kept });
    expect((await accepted.json<GenerationBody>()).generation.reason).toBe(kept);
    for (const reason of ["x\udfffy", "\ud83d", "tail \ud800"]) {
      const res = await call("PATCH", `/v1/ns/${ns}/generations/${id}`, { state: "preparing", reason });
      expect(res.status, JSON.stringify(reason)).toBe(400);
      expect(await res.json()).toMatchObject({ error: { code: "invalid_request", field: "reason" } });
    }
    const read = await (await call("GET", `/v1/ns/${ns}/generations/${id}`)).json<GenerationBody>();
    expect(read.generation).toMatchObject({ state: "standby", reason: kept });
  });
});

describe("generation storage", () => {
  it("stores the record with a schema version row", async () => {
    const { ns, id } = fresh();
    await call("POST", `/v1/ns/${ns}/generations`, { id, service: "api", instanceId: "i-1" });
    const stub = testEnv.GENERATIONS.getByName(objectName(ns, "generation", id));
    await runInDurableObject(stub, (_instance: GenerationObject, state) => {
      const meta = state.storage.sql.exec("SELECT key, value FROM meta").toArray();
      expect(meta).toEqual([{ key: "schema_version", value: 6 }]);
      const rows = state.storage.sql.exec("SELECT id, state FROM generation").toArray();
      expect(rows).toEqual([{ id, state: "joining" }]);
    });
  });

  it("an object of schema 5 keeps every deadline its horizons promised when it migrates", async () => {
    const { ns, id } = fresh();
    const base = `/v1/ns/${ns}/generations`;
    await call("POST", base, { id, service: "api", instanceId: "i-1" });
    const kept = await (await call("POST", `${base}/${id}/keepalive`, { ttlMs: 60_000 })).json<GenerationBody>();
    const deadlineMs = (kept.generation as unknown as { leaseExpiresAtMs: number }).leaseExpiresAtMs;
    const stub = testEnv.GENERATIONS.getByName(objectName(ns, "generation", id));
    // The row as schema 5 left it: keepalives answered up to its HTTP horizon without writing.
    await runInDurableObject(stub, (_instance: GenerationObject, state) => {
      state.storage.sql.exec(
        `ALTER TABLE generation RENAME COLUMN http_promise_ttl_ms TO http_horizon_ms;
         ALTER TABLE generation RENAME COLUMN channel_promise_ttl_ms TO channel_horizon_ms;
         UPDATE meta SET value = 5 WHERE key = 'schema_version'`,
      );
      state.storage.sql.exec("UPDATE generation SET http_horizon_ms = ?", deadlineMs + 120_000);
    });
    await restartObject(stub);
    const read = await (await call("GET", `${base}/${id}`)).json<GenerationBody>();
    expect(read.generation).toMatchObject({ leaseEpoch: "1", leaseExpiresAtMs: deadlineMs + 120_000 });
    const restarted = testEnv.GENERATIONS.getByName(objectName(ns, "generation", id));
    await runInDurableObject(restarted, (_instance: GenerationObject, state) => {
      expect(state.storage.sql.exec("SELECT value FROM meta WHERE key = 'schema_version'").one().value).toBe(6);
      expect(
        state.storage.sql
          .exec(
            "SELECT lease_expires_at_ms AS d, http_promise_ttl_ms AS h, channel_promise_ttl_ms AS c FROM generation",
          )
          .one(),
      ).toEqual({ d: deadlineMs + 120_000, h: 0, c: 0 });
    });
  });

  it("refuses to read or write a schema newer than the code (the object refuses to start)", async () => {
    const { ns, id } = fresh();
    await call("POST", `/v1/ns/${ns}/generations`, { id, service: "api", instanceId: "i-1" });
    const stub = testEnv.GENERATIONS.getByName(objectName(ns, "generation", id));
    await runInDurableObject(stub, (_instance: GenerationObject, state) => {
      state.storage.sql.exec("UPDATE meta SET value = 99 WHERE key = 'schema_version'");
    });
    // Only a deployment writes a newer schema, and a deployment restarts every object.
    await restartObject(stub);
    for (const res of [
      await call("GET", `/v1/ns/${ns}/generations/${id}`),
      await call("PATCH", `/v1/ns/${ns}/generations/${id}`, { state: "standby" }),
      await call("POST", `/v1/ns/${ns}/generations`, { id, service: "api", instanceId: "i-1" }),
    ]) {
      expect(res.status).toBe(500);
      expect(await res.json()).toMatchObject({ error: { code: "internal" } });
    }
    // Nothing could change: the object never started (not even runInDurableObject gets in).
    await expect(
      runInDurableObject(testEnv.GENERATIONS.getByName(objectName(ns, "generation", id)), () => 0),
    ).rejects.toThrow(/newer than this code/);
  });
});
