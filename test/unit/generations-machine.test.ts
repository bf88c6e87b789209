// The generation state machine: every (from, to) pair of the table of docs/protocol.md#generations, registration
// idempotency, and the rules for reason and time.
import { describe, expect, it } from "vitest";
import {
  LEGAL_TRANSITIONS,
  REGISTERED_REASON,
  canTransition,
  decidePatch,
  decideRegister,
  generationDecisionToResponse,
  isFinalState,
} from "../../src/core/generation-machine.ts";
import { GENERATION_STATES } from "../../src/protocol/generations.ts";
import type { GenerationRecord, GenerationState } from "../../src/protocol/generations.ts";

/** docs/protocol.md#claims, written out independently of the implementation's table. */
const LEGAL_MOVES = `
joining → standby | preparing | failed | retired
standby → preparing | active | failed | retired
preparing → standby | active | failed | retired
active → draining | transferring | retired | failed
draining → transferring | active | retired | failed
transferring → retired | active | failed | standby
`;

function specAllows(from: GenerationState, to: GenerationState): boolean {
  if (from === to) return true;
  for (const line of LEGAL_MOVES.trim().split("\n")) {
    const [source, targets] = line.split(" → ");
    if (source === from) return (targets ?? "").split(" | ").includes(to);
  }
  return false; // retired and failed are final
}

function record(state: GenerationState, overrides: Partial<GenerationRecord> = {}): GenerationRecord {
  return {
    id: "g1",
    service: "api",
    instanceId: "i-1",
    state,
    startedAtMs: 1_000,
    updatedAtMs: 2_000,
    reason: "earlier",
    leaseExpiresAtMs: 0,
    leaseEpoch: 0n,
    ...overrides,
  };
}

describe("transition table", () => {
  const pairs = GENERATION_STATES.flatMap((from) => GENERATION_STATES.map((to) => [from, to] as const));

  it("covers all 64 ordered pairs", () => {
    expect(pairs).toHaveLength(64);
  });

  it.each(pairs)("%s → %s matches the protocol", (from, to) => {
    const legal = specAllows(from, to);
    expect(canTransition(from, to)).toBe(legal);
    const decision = decidePatch(record(from), { state: to, reason: "why" }, 5_000);
    if (legal) {
      expect(decision).toEqual({
        ok: true,
        changed: true,
        created: false,
        record: record(to, { updatedAtMs: 5_000, reason: "why" }),
      });
    } else {
      expect(decision).toEqual({
        ok: false,
        refusal: { code: "invalid_state", message: expect.stringContaining(`${from} -> ${to}`), details: { from, to } },
      });
    }
  });

  it("has retired and failed as the only final states", () => {
    expect(GENERATION_STATES.filter(isFinalState)).toEqual(["retired", "failed"]);
    expect(LEGAL_TRANSITIONS.retired).toEqual([]);
    expect(LEGAL_TRANSITIONS.failed).toEqual([]);
  });

  it("never lists a state as a move to itself (same-state patches are a separate rule)", () => {
    for (const state of GENERATION_STATES) expect(LEGAL_TRANSITIONS[state]).not.toContain(state);
  });
});

describe("decideRegister", () => {
  const body = { id: "g1", service: "api", instanceId: "i-1" };

  it("creates a joining record stamped with nowMs", () => {
    expect(decideRegister(undefined, body, 7_000)).toEqual({
      ok: true,
      changed: true,
      created: true,
      record: {
        ...body,
        state: "joining",
        startedAtMs: 7_000,
        updatedAtMs: 7_000,
        reason: REGISTERED_REASON,
        leaseExpiresAtMs: 0,
        leaseEpoch: 0n,
      },
    });
  });

  it.each(GENERATION_STATES)("returns a %s record unchanged on a repeat", (state) => {
    const existing = record(state);
    expect(decideRegister(existing, body, 9_000)).toEqual({
      ok: true,
      changed: false,
      created: false,
      record: existing,
    });
  });

  it.each([
    { service: "web", instanceId: "i-1" },
    { service: "api", instanceId: "i-2" },
  ])("refuses another owner %o with generation_exists carrying the record", (other) => {
    const existing = record("active");
    const decision = decideRegister(existing, { id: "g1", ...other }, 9_000);
    expect(decision).toMatchObject({
      ok: false,
      // The record travels in its wire form (the lease epoch as a decimal string).
      refusal: { code: "generation_exists", details: { generation: { ...existing, leaseEpoch: "0" } } },
    });
  });
});

describe("decidePatch", () => {
  it("refuses an absent generation with generation_not_found", () => {
    expect(decidePatch(undefined, { state: "standby" }, 1)).toMatchObject({
      ok: false,
      refusal: { code: "generation_not_found" },
    });
  });

  it("clears the reason on a move without one", () => {
    const decision = decidePatch(record("active"), { state: "draining" }, 5_000);
    expect(decision).toMatchObject({ ok: true, record: { state: "draining", reason: "" } });
  });

  it("keeps the reason on a same-state patch without one and only bumps the time", () => {
    const decision = decidePatch(record("standby"), { state: "standby" }, 5_000);
    expect(decision).toEqual({
      ok: true,
      changed: true,
      created: false,
      record: record("standby", { updatedAtMs: 5_000 }),
    });
  });

  it("updates reason and time on a same-state patch in a final state", () => {
    const decision = decidePatch(record("failed"), { state: "failed", reason: "oom" }, 5_000);
    expect(decision).toMatchObject({ ok: true, record: { state: "failed", reason: "oom", updatedAtMs: 5_000 } });
  });

  it("never moves updatedAtMs backwards or touches startedAtMs", () => {
    const decision = decidePatch(record("standby"), { state: "active", reason: "acquired" }, 1_500);
    expect(decision).toMatchObject({ ok: true, record: { updatedAtMs: 2_000, startedAtMs: 1_000 } });
  });
});

describe("generationDecisionToResponse", () => {
  it("renders success as 200 {generation}", () => {
    const r = record("active");
    expect(generationDecisionToResponse({ ok: true, record: r, changed: false, created: false })).toEqual({
      status: 200,
      body: { generation: { ...r, leaseEpoch: "0" } },
    });
  });

  it("renders refusals as the error envelope with details inside error", () => {
    const response = generationDecisionToResponse(decidePatch(record("retired"), { state: "active" }, 1));
    expect(response).toEqual({
      status: 409,
      body: { error: { code: "invalid_state", message: expect.any(String), from: "retired", to: "active" } },
    });
    expect(generationDecisionToResponse(decidePatch(undefined, { state: "active" }, 1)).status).toBe(404);
    const exists = decideRegister(record("joining"), { id: "g1", service: "x", instanceId: "y" }, 1);
    expect(generationDecisionToResponse(exists).status).toBe(409);
  });
});
