// Operation ids and default generation ids of the handoff runtime are valid names (docs/protocol.md#wire-conventions:
// 1–256 bytes of UTF-8) whatever the claim, generation, service and instance names are:
// never cut inside a code point, never longer than 256 bytes, and the unique `:seq` suffix
// always kept, so a retried step reuses its id and two steps never share one.
import { describe, expect, it } from "vitest";
import { GenerationSession } from "../../src/client/handoff/index.ts";
import { MemoryClaimsBackend } from "../../src/client/claims/memory-claims-backend.ts";
import { ManualClock } from "../../src/core/clock.ts";
import { nameProblem } from "../../src/protocol/names.ts";
import { rig } from "./handoff-fixtures.ts";

const bytes = (s: string): number => new TextEncoder().encode(s).byteLength;

describe("operation ids", () => {
  it("release works for a non-ASCII claim and generation whose joined id exceeds 256 bytes", async () => {
    const r = rig();
    const generation = "é".repeat(100); // 200 bytes, 100 UTF-16 units
    const claim = "ü".repeat(100); // 200 bytes
    const a = await r.open(generation);
    const lease = await a.claim(claim).tryAcquire();
    await lease.release();
    expect((await r.backend.getClaim(claim)).phase).toBe("unowned");
    await a.close();
  });

  it("never splits a surrogate pair (an emoji claim name)", async () => {
    const r = rig();
    // 151 UTF-16 units before the claim: cutting the joined id at 256 units lands inside a pair.
    const a = await r.open(`g-${"x".repeat(140)}`);
    const claim = "😀".repeat(60); // 240 bytes, 120 UTF-16 units
    const lease = await a.claim(claim).tryAcquire();
    await lease.release();
    expect((await r.backend.getClaim(claim)).phase).toBe("unowned");
    await a.close();
  });

  it("keeps the unique suffix of long ASCII ids: two releases of one claim never share an id", async () => {
    const r = rig();
    const a = await r.open("g".repeat(250));
    const claim = "c".repeat(250);
    for (let i = 0; i < 3; i++) {
      const lease = await a.claim(claim).tryAcquire();
      await lease.release(); // a repeated id would be operation_id_conflict (other token)
    }
    expect((await r.backend.getClaim(claim)).fencingToken).toBe(3n);
    await a.close();
  });

  it("every id a handoff sends is a valid name, distinct per step and claim", async () => {
    const r = rig();
    const sent: string[] = [];
    for (const method of ["prepareTransfer", "commitTransfer", "releaseClaim"] as const) {
      r.faults[method] = (args) => {
        sent.push((args[0] as { operationId: string }).operationId);
        return undefined;
      };
    }
    const a = await r.open("α".repeat(127)); // 254 bytes
    const b = await r.open("gen-b");
    for (const claim of ["β".repeat(128), "γ".repeat(128)]) await a.claim(claim).tryAcquire();
    await a.handoffTo("gen-b");
    expect(sent).toHaveLength(4);
    for (const id of sent) {
      expect(nameProblem(id), id).toBeUndefined();
      expect(bytes(id)).toBeLessThanOrEqual(256);
    }
    expect(new Set(sent).size).toBe(sent.length);
    await b.close();
  });
});

describe("default generation id", () => {
  it("is a valid name even when service and instance are long", () => {
    const clock = new ManualClock(5_000);
    const backend = new MemoryClaimsBackend({ clock });
    const s = new GenerationSession({ service: "s".repeat(200), instanceId: "ï".repeat(100), backend, clock });
    expect(nameProblem(s.generationId)).toBeUndefined();
    expect(s.generationId.endsWith("-5000")).toBe(true);
    expect(s.generationId.startsWith("s".repeat(100))).toBe(true);
    const other = new GenerationSession({ service: "s".repeat(200), instanceId: "ï".repeat(99), backend, clock });
    expect(other.generationId).not.toBe(s.generationId);
  });
});
