// Eviction in the pure machines (docs/protocol.md#eviction), with explicit times: the claim
// machine's `evict` command and its `evicted` refusal, and the scope machine's `evict`.
import { describe, expect, it } from "vitest";
import { decideClaim, isEvictedToken } from "../../src/core/claim-machine.ts";
import { decideScope, type ScopeCommand } from "../../src/core/scope-machine.ts";
import { emptyScopeState, type ScopeState } from "../../src/core/scope-state.ts";
import { LATE, NAME, NOW, T0, owned, renew, reserved, unowned } from "./claims-machine-cases.ts";

describe("claim machine: evict", () => {
  it("ends a hold like a release, with reason evicted, the note on its event and the token kept", () => {
    const step = decideClaim(NAME, reserved("a", "b", 7n), { kind: "evict", note: "INC-1" }, NOW);
    expect(step.result.ok).toBe(true);
    expect(step.next).toMatchObject({
      phase: "unowned",
      ownerGeneration: "",
      previousOwner: "a",
      pendingSuccessor: "",
      transferStatus: "",
      drainStatus: "",
      reason: "evicted",
      fencingToken: 7n,
    });
    expect(step.tokenAdvanced).toBe(false);
    expect(step.events).toEqual([{ reason: "evicted", claim: step.next, timeMs: NOW, note: "INC-1" }]);
  });

  it("leaves an unowned claim as it is, and a claim that expired first stays expired (its token is not evicted)", () => {
    const released = unowned("a", 3n, { reason: "released" });
    const unchanged = decideClaim(NAME, released, { kind: "evict" }, NOW);
    expect(unchanged.changed).toBe(false);
    expect(unchanged.result).toEqual({ ok: true, claim: released });
    const late = decideClaim(NAME, owned("a"), { kind: "evict" }, LATE);
    expect(late.events.map((e) => e.reason)).toEqual(["expired"]);
    expect(late.next?.reason).toBe("expired");
    expect(decideClaim(NAME, late.next, renew("a", 1n), LATE).result).toMatchObject({
      ok: false,
      refusal: { code: "not_owner" },
    });
  });

  it("refuses the evicted token with `evicted` (with the record) until an acquire moves token and reason", () => {
    const evicted = decideClaim(NAME, owned("a", 5n), { kind: "evict" }, NOW).next!;
    expect(isEvictedToken(evicted, 5n)).toBe(true);
    expect(isEvictedToken(evicted, 4n)).toBe(false);
    const refused = decideClaim(NAME, evicted, renew("a", 5n), NOW + 1);
    expect(refused.result).toMatchObject({ ok: false, refusal: { code: "evicted" }, claim: evicted });
    expect(refused.changed).toBe(false);
    // Another token is judged by the usual rules.
    expect(decideClaim(NAME, evicted, renew("a", 4n), NOW + 1).result).toMatchObject({
      refusal: { code: "not_owner" },
    });
    const acquired = decideClaim(NAME, evicted, { kind: "acquire", generationId: "a", ttlMs: 1_000 }, NOW + 2).next!;
    expect(acquired.fencingToken).toBe(6n);
    expect(isEvictedToken(acquired, 5n)).toBe(false);
  });

  it("answers claim_not_found for a claim never created, creating nothing", () => {
    const step = decideClaim(NAME, undefined, { kind: "evict" }, T0);
    expect(step.result).toMatchObject({ ok: false, refusal: { code: "claim_not_found" } });
    expect(step.next).toBeUndefined();
  });
});

describe("scope machine: evict", () => {
  const STORE = { volumeId: "vol", objectStoreId: "objects", key: "" };
  const acquire = (participantId: string, id: string, waitMs = 0): ScopeCommand => ({
    kind: "acquire",
    participantId,
    ttlMs: 1_000,
    waitMs,
    leaseId: `lease-${id}`,
    waiterId: `waiter-${id}`,
  });
  const held = (): ScopeState => {
    let state = decideScope(emptyScopeState(STORE), acquire("a", "1"), T0).next;
    state = decideScope(state, acquire("b", "2", 5_000), T0 + 1).next;
    return state;
  };

  it("ends the lease as an expiry would: unlocked with evicted and note, next waiter granted with epoch+1", () => {
    const step = decideScope(held(), { kind: "evict", note: "stuck" }, T0 + 2);
    expect(step.events).toEqual([
      expect.objectContaining({ processId: "a", unlocked: true, evicted: true, note: "stuck" }),
    ]);
    expect(step.events[0]?.expired).toBeUndefined();
    expect(step.granted).toEqual([
      { waiterId: "waiter-2", lease: expect.objectContaining({ leaseId: "lease-2", epoch: 2n, participantId: "b" }) },
    ]);
    expect(step.result).toMatchObject({ ok: true, kind: "snapshot" });
    const keepalive = decideScope(step.next, { kind: "keepalive", leaseId: "lease-1" }, T0 + 3);
    expect(keepalive.result).toMatchObject({ ok: false, refusal: { code: "lease_lost" } });
  });

  it("changes nothing on a free scope", () => {
    const free = emptyScopeState(STORE);
    const step = decideScope(free, { kind: "evict" }, T0);
    expect(step.changed).toBe(false);
    expect(step.events).toEqual([]);
    expect(step.next).toEqual(free);
  });
});
