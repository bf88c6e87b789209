/* eslint-disable @typescript-eslint/no-explicit-any, @typescript-eslint/no-unsafe-return -- log lines are inspected loosely. */
// Logs and metrics (docs/operations.md): one JSON line per mutation and per refused request,
// written once by the router's mount pipeline, captured here from console.log; counters to an
// Analytics Engine binding when one is configured (a fake dataset object stands in for it).
import { runInDurableObject } from "cloudflare:test";
import { exports } from "cloudflare:workers";
import { afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import type { ClaimObject } from "./test-entry.ts";
import { WRITE, READ, claimStub, claimUrl, get, post, unique } from "./claims-helpers.ts";

beforeAll(async () => {
  await exports.default.fetch("http://x/healthz");
}, 60_000);

afterEach(() => {
  vi.restoreAllMocks();
});

/** The JSON lines console.log received while `run` ran. */
async function captured(run: () => Promise<void>): Promise<any[]> {
  const lines: unknown[] = [];
  const spy = vi.spyOn(console, "log").mockImplementation((...args: unknown[]) => {
    lines.push(args);
  });
  try {
    await run();
  } finally {
    spy.mockRestore();
  }
  return lines.map((args) => {
    const list = args as unknown[];
    expect(list).toHaveLength(1);
    return JSON.parse(list[0] as string);
  });
}

describe("structured log lines", () => {
  it("one line per mutation and per refusal, none for a successful read, never a secret", async () => {
    const ns = unique("ns");
    const lines = await captured(async () => {
      expect((await post(claimUrl(ns, "job", "/acquire"), { generationId: "g1", ttlMs: 60_000 })).status).toBe(200);
      expect((await post(claimUrl(ns, "job", "/acquire"), { generationId: "g2", ttlMs: 60_000 })).status).toBe(409);
      expect((await get(claimUrl(ns, "job"), READ)).status).toBe(200);
      expect((await post(claimUrl(ns, "job", "/renew"), { generationId: "g1", token: "1" }, READ)).status).toBe(403);
      expect((await get(claimUrl(ns, "job"), "nope")).status).toBe(401);
    });
    expect(lines).toEqual([
      {
        namespace: ns,
        kind: "claim",
        name: "job",
        operation: "acquireClaim",
        status: 200,
        outcome: "ok",
        token: "1",
        version: "1",
        durationMs: expect.any(Number),
        // The configured name (test-write-all has none: its position in AUTH_TOKENS), never the secret.
        tokenName: "token#0",
      },
      expect.objectContaining({ operation: "acquireClaim", status: 409, outcome: "claim_held", token: "1" }),
      expect.objectContaining({
        namespace: ns,
        name: "job",
        operation: "renewClaim",
        outcome: "forbidden",
        tokenName: "token#1",
      }),
      expect.objectContaining({ namespace: ns, status: 401, outcome: "unauthorized" }),
    ]);
    const text = JSON.stringify(lines);
    for (const secret of [WRITE, READ, "nope"]) expect(text).not.toContain(secret);
    await runInDurableObject(claimStub(ns, "job"), (_o, s) => s.storage.deleteAlarm());
  });

  it("a coord grant logs its epoch, not its lease id", async () => {
    const ns = unique("ns");
    let leaseId = "";
    const lines = await captured(async () => {
      const res = await post(`http://x/v1/ns/${ns}/volumes/v/stores/s/leases`, { participantId: "p", ttlMs: 60_000 });
      expect(res.status).toBe(201);
      leaseId = res.body.lease.leaseId;
    });
    expect(lines).toEqual([
      expect.objectContaining({
        kind: "scope",
        name: "v/s/",
        operation: expect.stringMatching(/^acquireWriteLease/),
        epoch: "1",
        outcome: "ok",
      }),
    ]);
    expect(JSON.stringify(lines)).not.toContain(leaseId);
  });

  it("a heartbeat's success writes no line, its refusal does, alone or in a batch", async () => {
    const ns = unique("ns");
    expect((await post(claimUrl(ns, "job", "/acquire"), { generationId: "g1", ttlMs: 60_000 })).status).toBe(200);
    const scope = `http://x/v1/ns/${ns}/volumes/v/stores/s`;
    const granted = await post(`${scope}/leases`, { participantId: "p", ttlMs: 60_000 });
    expect(granted.status).toBe(201);
    const leaseId: string = granted.body.lease.leaseId;
    const lease = `${scope}/leases/${encodeURIComponent(leaseId)}`;
    const lines = await captured(async () => {
      expect(
        (await post(claimUrl(ns, "job", "/renew"), { generationId: "g1", token: "1", ttlMs: 60_000 })).status,
      ).toBe(200);
      expect((await post(`${lease}/keepalive`, { ttlMs: 60_000 })).status).toBe(200);
      const renewals = [
        { op: "renew", claim: "job", generationId: "g1", token: "1", ttlMs: 60_000 },
        { op: "renew", claim: "ghost", generationId: "g1", token: "1", ttlMs: 60_000 },
      ];
      const batch = await post(`http://x/v1/ns/${encodeURIComponent(ns)}/batch`, { ops: renewals });
      const results = batch.body.results as { status: number }[];
      expect(results.map((r) => r.status)).toEqual([200, 404]);
      expect(
        (await post(claimUrl(ns, "job", "/renew"), { generationId: "g1", token: "7", ttlMs: 60_000 })).status,
      ).toBe(409);
      expect((await post(`${scope}/leases/not-a-lease/keepalive`, {})).status).toBe(410);
    });
    expect(lines).toEqual([
      expect.objectContaining({ operation: "renewClaim", name: "ghost", outcome: "claim_not_found" }),
      // The batch itself is a write of its own (one line, whatever its ops).
      expect.objectContaining({ operation: "claimBatch", status: 200 }),
      expect.objectContaining({ operation: "renewClaim", name: "job", outcome: "stale_token" }),
      expect.objectContaining({ kind: "scope", operation: expect.stringMatching(/^keepalive/), outcome: "lease_lost" }),
    ]);
    await runInDurableObject(claimStub(ns, "job"), (_o, s) => s.storage.deleteAlarm());
  });

  it("an eviction logs the operator token's name and note", async () => {
    const ns = unique("ns");
    expect((await post(claimUrl(ns, "job", "/acquire"), { generationId: "g1", ttlMs: 60_000 })).status).toBe(200);
    const lines = await captured(async () => {
      const res = await post(claimUrl(ns, "job", "/evict"), { note: "stuck since 04:00" }, "test-admin-all");
      expect(res.status).toBe(200);
      const scope = `http://x/v1/ns/${ns}/volumes/v/stores/s`;
      expect((await post(`${scope}/leases`, { participantId: "p", ttlMs: 60_000 })).status).toBe(201);
      expect((await post(`${scope}/evict`, {}, "test-admin-all")).status).toBe(200);
    });
    expect(lines).toEqual([
      expect.objectContaining({
        kind: "claim",
        name: "job",
        operation: "evictClaim",
        outcome: "ok",
        token: "1",
        tokenName: "test-admin",
        note: "stuck since 04:00",
      }),
      expect.objectContaining({ operation: expect.stringMatching(/^acquireWriteLease/), tokenName: "token#0" }),
      expect.objectContaining({ kind: "scope", name: "v/s/", operation: "evictWriteLease", tokenName: "test-admin" }),
    ]);
    expect(JSON.stringify(lines)).not.toContain("test-admin-all");
    await runInDurableObject(claimStub(ns, "job"), (_o, s) => s.storage.deleteAlarm());
  });
});

describe("metrics", () => {
  it("counters go to the METRICS dataset when one is bound", async () => {
    const ns = unique("ns");
    const points: AnalyticsEngineDataPoint[] = [];
    const stub = claimStub(ns, "m");
    await runInDurableObject(stub, (o: ClaimObject) => {
      // The binding is optional: a fake dataset object stands in for Workers Analytics Engine.
      (o as unknown as { env: Record<string, unknown> }).env["METRICS"] = {
        writeDataPoint: (p: AnalyticsEngineDataPoint) => points.push(p),
      };
    });
    expect((await post(claimUrl(ns, "m", "/acquire"), { generationId: "g1", ttlMs: 60_000 })).status).toBe(200);
    expect((await post(claimUrl(ns, "m", "/acquire"), { generationId: "g2", ttlMs: 60_000 })).status).toBe(409);
    expect(points).toEqual([
      { indexes: [ns], blobs: [ns, "acquires"], doubles: [1] },
      { indexes: [ns], blobs: [ns, "conflict:claim_held"], doubles: [1] },
    ]);
    await runInDurableObject(stub, (_o, s) => s.storage.deleteAlarm());
  });
});
