// A handoff that drains before the commit instead of before the prepare
// (`drain: "before-commit"`): the old owner keeps working while its claims are only
// prepared, nothing of it is in flight when the commit is sent, and a failure still rolls
// every claim back.
import { describe, expect, it } from "vitest";
import { hasCode } from "../../src/protocol/errors.ts";
import { advanceBy, rig } from "./handoff-fixtures.ts";

const name = (prefix = "claim"): string => `${prefix}-${crypto.randomUUID()}`;

describe("handoff with drain before commit", () => {
  it("accepts work while prepared, drains, then commits with the same events otherwise", async () => {
    const r = rig();
    const a = await r.open("gen-a");
    const lease = await a.claim(name()).tryAcquire();
    const from = r.events.length;
    const h = a.prepareHandoff("gen-b", { drain: "before-commit" });
    expect(a.state).toBe("active");
    await h.transfer();
    expect(h.status).toBe("prepared");
    expect(a.state).toBe("transferring");
    // The old owner's token is still the claim's: its work goes on while only prepared.
    const end = a.drain.begin();
    let committed = false;
    const commit = h.commit().then(() => (committed = true));
    await advanceBy(r.clock, 100);
    expect(committed).toBe(false); // the commit waits for the unit in flight
    expect(() => a.drain.begin()).toThrow(); // and no new one starts
    end();
    const result = await commit;
    expect(result).toBe(true);
    expect(lease.endReason).toBe("transferred");
    expect(await r.backend.getClaim(lease.claimName)).toMatchObject({
      ownerGeneration: "gen-b",
      fencingToken: lease.token + 1n,
    });
    expect(r.events.slice(from).map((e) => (e.type === "generation.state" ? `state:${e.to}` : e.type))).toEqual([
      "handoff.started",
      "state:transferring",
      "transfer.prepared",
      "drain.started",
      "drain.completed",
      "claim.released",
      "transfer.committed",
      "handoff.completed",
      "state:retired",
      "closed",
    ]);
  });

  it("handoffTo runs transfer → drain → commit", async () => {
    const r = rig();
    const a = await r.open("gen-a");
    const lease = await a.claim(name()).tryAcquire();
    const result = await a.handoffTo("gen-b", { drain: "before-commit" });
    expect(result.claims.map((c) => c.token)).toEqual([lease.token + 1n]);
    expect(a.state).toBe("retired");
  });

  it("a drain timeout after the prepare aborts every claim and gives the work back", async () => {
    const r = rig();
    const a = await r.open("gen-a", { drainTimeoutMs: 300 });
    const lease = await a.claim(name()).tryAcquire();
    const h = a.prepareHandoff("gen-b", { drain: "before-commit" });
    await h.transfer();
    const end = a.drain.begin();
    const failing = h.commit().catch((e: unknown) => e);
    await advanceBy(r.clock, 400);
    const err = await failing;
    expect(hasCode(err, "invalid_state") && err.details["reason"] === "drain_timeout").toBe(true);
    expect(h.status).toBe("aborted");
    end();
    expect(a.state).toBe("active");
    expect(lease.held).toBe(true);
    expect(await r.backend.getClaim(lease.claimName)).toMatchObject({
      ownerGeneration: "gen-a",
      phase: "owned",
      fencingToken: lease.token,
    });
    a.drain.begin()(); // the drain group reopened
    await a.close();
  });

  it("the transfer timeout while the work drains aborts once and ends the commit", async () => {
    const r = rig();
    const a = await r.open("gen-a", { drainTimeoutMs: 5_000 });
    const lease = await a.claim(name()).tryAcquire();
    const h = a.prepareHandoff("gen-b", { drain: "before-commit" });
    await h.transfer();
    const end = a.drain.begin();
    const failing = h.commit().catch((e: unknown) => e);
    await advanceBy(r.clock, 1_100);
    expect(hasCode(await failing, "no_transfer")).toBe(true);
    expect(h.status).toBe("aborted");
    expect(r.events.filter((e) => e.type === "handoff.failed")).toHaveLength(1);
    end();
    expect(lease.held).toBe(true);
    expect((await r.backend.getClaim(lease.claimName)).ownerGeneration).toBe("gen-a");
    await a.close();
  });
});
