// The claims state machine, rule by rule in SPEC §3's order, with explicit times.
import { describe, expect, it } from "vitest";
import { decideClaim, emptyClaim, nextDeadlineMs } from "../../src/claims/machine.ts";
import type { ClaimCommand, ClaimStep } from "../../src/claims/machine.ts";
import type { ClaimRecord } from "../../src/protocol/claims.ts";
import { MAX_FENCING_TOKEN } from "../../src/protocol/counter.ts";

const NAME = "orders";
const T0 = 1_000_000;
const TTL = 1_000;

/** A claim owned by `owner` with `token`, acquired at T0 and expiring at T0 + TTL. */
function owned(owner: string, token = 1n, patch: Partial<ClaimRecord> = {}): ClaimRecord {
  return {
    ...emptyClaim(NAME),
    ownerGeneration: owner,
    fencingToken: token,
    phase: "owned",
    acquiredAtMs: T0,
    lastHeartbeatMs: T0,
    expiresAtMs: T0 + TTL,
    reason: "acquired",
    version: 5n,
    ...patch,
  };
}

function reserved(owner: string, successor: string, token = 1n, patch: Partial<ClaimRecord> = {}): ClaimRecord {
  return owned(owner, token, {
    phase: "reserved",
    pendingSuccessor: successor,
    transferStatus: "prepared",
    drainStatus: "complete",
    reason: "transfer_prepared",
    ...patch,
  });
}

function unowned(previousOwner: string, token = 1n, patch: Partial<ClaimRecord> = {}): ClaimRecord {
  return { ...emptyClaim(NAME), previousOwner, fencingToken: token, reason: "released", version: 5n, ...patch };
}

interface Case {
  rule: string;
  start: ClaimRecord | undefined;
  command: ClaimCommand;
  now?: number;
  /** Refusal code, or undefined for success. */
  code?: string;
  /** Fields the resulting record must have (checked on `next`). */
  next?: Partial<ClaimRecord> | "unchanged" | "absent";
  events?: string[];
  tokenAdvanced?: boolean;
}

const acquire = (generationId: string, ttlMs = TTL, allowEmptyOnly?: boolean): ClaimCommand => ({
  kind: "acquire",
  generationId,
  ttlMs,
  ...(allowEmptyOnly === undefined ? {} : { allowEmptyOnly }),
});
const renew = (generationId: string, token: bigint, ttlMs = TTL): ClaimCommand => ({
  kind: "renew",
  generationId,
  token,
  ttlMs,
});
const prepare = (from: string, to: string, token: bigint, ttlMs = TTL): ClaimCommand => ({
  kind: "prepare",
  fromGeneration: from,
  toGeneration: to,
  token,
  ttlMs,
});
const commit = (from: string, to: string, expectedToken: bigint, ttlMs = TTL): ClaimCommand => ({
  kind: "commit",
  fromGeneration: from,
  toGeneration: to,
  expectedToken,
  ttlMs,
});
const abort = (from: string, to: string, expectedToken: bigint): ClaimCommand => ({
  kind: "abort",
  fromGeneration: from,
  toGeneration: to,
  expectedToken,
});
const release = (generationId: string, token: bigint): ClaimCommand => ({ kind: "release", generationId, token });

const NOW = T0 + 10;
const LATE = T0 + TTL + 1;

const cases: Case[] = [
  // Expiry: strict, lazy, its own change and event, token kept.
  {
    rule: "expiry: still held at exactly expiresAtMs",
    start: owned("a"),
    command: { kind: "get" },
    now: T0 + TTL,
    next: "unchanged",
    events: [],
  },
  {
    rule: "expiry: applied on read 1 ms after the deadline",
    start: owned("a"),
    command: { kind: "get" },
    now: LATE,
    next: {
      phase: "unowned",
      ownerGeneration: "",
      previousOwner: "a",
      fencingToken: 1n,
      reason: "expired",
      version: 6n,
    },
    events: ["expired"],
  },
  {
    rule: "expiry: a reserved claim loses owner and reservation",
    start: reserved("a", "b"),
    command: { kind: "expire" },
    now: LATE,
    next: {
      phase: "unowned",
      ownerGeneration: "",
      pendingSuccessor: "",
      transferStatus: "",
      drainStatus: "",
      previousOwner: "a",
    },
    events: ["expired"],
  },
  {
    rule: "expiry: the expire command on a live claim changes nothing",
    start: owned("a"),
    command: { kind: "expire" },
    now: NOW,
    next: "unchanged",
    events: [],
  },
  {
    rule: "expiry: the expire command on an absent claim",
    start: undefined,
    command: { kind: "expire" },
    code: "claim_not_found",
    next: "absent",
  },
  {
    rule: "expiry: an unowned claim never expires",
    start: unowned("a", 1n, { expiresAtMs: T0 }),
    command: { kind: "get" },
    now: LATE,
    next: "unchanged",
  },
  {
    rule: "expiry: persisted even when the revealing command fails",
    start: owned("a"),
    command: renew("a", 1n),
    now: LATE,
    code: "not_owner",
    next: { phase: "unowned", reason: "expired", version: 6n },
    events: ["expired"],
  },

  // acquire
  {
    rule: "acquire: absent → created, token 1, version 1",
    start: undefined,
    command: acquire("a"),
    now: NOW,
    next: {
      name: NAME,
      ownerGeneration: "a",
      fencingToken: 1n,
      phase: "owned",
      acquiredAtMs: NOW,
      lastHeartbeatMs: NOW,
      expiresAtMs: NOW + TTL,
      previousOwner: "",
      reason: "acquired",
      version: 1n,
    },
    events: ["acquired"],
    tokenAdvanced: true,
  },
  {
    rule: "acquire: same owner extends to now+ttl, reason renewed, no event",
    start: owned("a"),
    command: acquire("a", 5_000),
    now: NOW,
    next: {
      expiresAtMs: NOW + 5_000,
      lastHeartbeatMs: NOW,
      reason: "renewed",
      fencingToken: 1n,
      phase: "owned",
      version: 6n,
    },
    events: [],
    tokenAdvanced: false,
  },
  {
    rule: "acquire: same owner never shortens the lease",
    start: owned("a"),
    command: acquire("a", 100),
    now: NOW,
    next: { expiresAtMs: T0 + TTL, reason: "renewed" },
    events: [],
  },
  {
    rule: "acquire: same owner with allowEmptyOnly → claim_held",
    start: owned("a"),
    command: acquire("a", TTL, true),
    now: NOW,
    code: "claim_held",
    next: "unchanged",
  },
  {
    rule: "acquire: owned by another → claim_held",
    start: owned("a"),
    command: acquire("b"),
    now: NOW,
    code: "claim_held",
    next: "unchanged",
  },
  {
    rule: "acquire: reserved by another → claim_held",
    start: reserved("a", "b"),
    command: acquire("b"),
    now: NOW,
    code: "claim_held",
    next: "unchanged",
  },
  {
    rule: "acquire: reserved, same owner → extends, phase kept",
    start: reserved("a", "b"),
    command: acquire("a", 5_000),
    now: NOW,
    next: { phase: "reserved", pendingSuccessor: "b", expiresAtMs: NOW + 5_000, reason: "renewed" },
    events: [],
  },
  {
    rule: "acquire: unowned → token+1, previousOwner = last owner, statuses cleared",
    start: unowned("a", 7n, { transferStatus: "committed" }),
    command: acquire("b"),
    now: NOW,
    next: {
      ownerGeneration: "b",
      fencingToken: 8n,
      previousOwner: "a",
      transferStatus: "",
      drainStatus: "",
      pendingSuccessor: "",
      version: 6n,
    },
    events: ["acquired"],
    tokenAdvanced: true,
  },
  {
    rule: "acquire: after expiry by the same generation → a new token",
    start: owned("a"),
    command: acquire("a"),
    now: LATE,
    next: { ownerGeneration: "a", fencingToken: 2n, previousOwner: "a", version: 7n, reason: "acquired" },
    events: ["expired", "acquired"],
    tokenAdvanced: true,
  },
  {
    rule: "acquire: token at 2^64−2 → token_overflow",
    start: unowned("a", MAX_FENCING_TOKEN),
    command: acquire("b"),
    now: NOW,
    code: "token_overflow",
    next: "unchanged",
  },
  {
    rule: "acquire: 2^64−3 → 2^64−2 is the last token issued",
    start: unowned("a", MAX_FENCING_TOKEN - 1n),
    command: acquire("b"),
    now: NOW,
    next: { fencingToken: MAX_FENCING_TOKEN },
    events: ["acquired"],
    tokenAdvanced: true,
  },

  // renew
  {
    rule: "renew: absent → claim_not_found",
    start: undefined,
    command: renew("a", 1n),
    code: "claim_not_found",
    next: "absent",
  },
  {
    rule: "renew: owner ≠ caller → not_owner (before the token check)",
    start: owned("a"),
    command: renew("b", 9n),
    now: NOW,
    code: "not_owner",
    next: "unchanged",
  },
  {
    rule: "renew: unowned → not_owner",
    start: unowned("a"),
    command: renew("a", 1n),
    now: NOW,
    code: "not_owner",
    next: "unchanged",
  },
  {
    rule: "renew: token ≠ → stale_token",
    start: owned("a"),
    command: renew("a", 2n),
    now: NOW,
    code: "stale_token",
    next: "unchanged",
  },
  {
    rule: "renew: expires = now+ttl (may shorten), heartbeat = now, no event",
    start: owned("a"),
    command: renew("a", 1n, 200),
    now: NOW,
    next: { expiresAtMs: NOW + 200, lastHeartbeatMs: NOW, reason: "renewed", version: 6n },
    events: [],
  },
  {
    rule: "renew: allowed while reserved",
    start: reserved("a", "b"),
    command: renew("a", 1n),
    now: NOW,
    next: { phase: "reserved", reason: "renewed" },
    events: [],
  },

  // prepare
  {
    rule: "prepare: absent → claim_not_found",
    start: undefined,
    command: prepare("a", "b", 1n),
    code: "claim_not_found",
    next: "absent",
  },
  {
    rule: "prepare: unowned → not_owner",
    start: unowned("a"),
    command: prepare("a", "b", 1n),
    now: NOW,
    code: "not_owner",
    next: "unchanged",
  },
  {
    rule: "prepare: owner ≠ from → not_owner",
    start: owned("a"),
    command: prepare("x", "b", 1n),
    now: NOW,
    code: "not_owner",
    next: "unchanged",
  },
  {
    rule: "prepare: token ≠ → stale_token (before the successor check)",
    start: owned("a"),
    command: prepare("a", "", 2n),
    now: NOW,
    code: "stale_token",
    next: "unchanged",
  },
  {
    rule: "prepare: empty successor → invalid_request",
    start: owned("a"),
    command: prepare("a", "", 1n),
    now: NOW,
    code: "invalid_request",
    next: "unchanged",
  },
  {
    rule: "prepare: successor = from → invalid_request",
    start: owned("a"),
    command: prepare("a", "a", 1n),
    now: NOW,
    code: "invalid_request",
    next: "unchanged",
  },
  {
    rule: "prepare: reserved for another successor → concurrent_transfer",
    start: reserved("a", "b"),
    command: prepare("a", "c", 1n),
    now: NOW,
    code: "concurrent_transfer",
    next: "unchanged",
  },
  {
    rule: "prepare: reserved for the same successor → unchanged",
    start: reserved("a", "b"),
    command: prepare("a", "b", 1n),
    now: NOW,
    next: "unchanged",
    events: [],
  },
  {
    rule: "prepare: reserves, token unchanged",
    start: owned("a"),
    command: prepare("a", "b", 1n, 3_000),
    now: NOW,
    next: {
      phase: "reserved",
      ownerGeneration: "a",
      pendingSuccessor: "b",
      transferStatus: "prepared",
      drainStatus: "complete",
      expiresAtMs: NOW + 3_000,
      reason: "transfer_prepared",
      fencingToken: 1n,
      version: 6n,
    },
    events: ["transfer_prepared"],
    tokenAdvanced: false,
  },

  // commit
  {
    rule: "commit: absent → claim_not_found",
    start: undefined,
    command: commit("a", "b", 1n),
    code: "claim_not_found",
    next: "absent",
  },
  {
    rule: "commit: already committed to `to` → success, unchanged",
    start: owned("b", 2n, { previousOwner: "a", transferStatus: "committed", reason: "transfer_committed" }),
    command: commit("a", "b", 1n),
    now: NOW,
    next: "unchanged",
    events: [],
  },
  {
    rule: "commit: not reserved → no_transfer",
    start: owned("a"),
    command: commit("a", "b", 1n),
    now: NOW,
    code: "no_transfer",
    next: "unchanged",
  },
  {
    rule: "commit: owner ≠ from → concurrent_transfer",
    start: reserved("a", "b"),
    command: commit("x", "b", 1n),
    now: NOW,
    code: "concurrent_transfer",
    next: "unchanged",
  },
  {
    rule: "commit: pending ≠ to → concurrent_transfer",
    start: reserved("a", "b"),
    command: commit("a", "c", 1n),
    now: NOW,
    code: "concurrent_transfer",
    next: "unchanged",
  },
  {
    rule: "commit: token ≠ expected → stale_token",
    start: reserved("a", "b"),
    command: commit("a", "b", 2n),
    now: NOW,
    code: "stale_token",
    next: "unchanged",
  },
  {
    rule: "commit: token at max → token_overflow, reservation kept",
    start: reserved("a", "b", MAX_FENCING_TOKEN),
    command: commit("a", "b", MAX_FENCING_TOKEN),
    now: NOW,
    code: "token_overflow",
    next: "unchanged",
  },
  {
    rule: "commit: hands over with token+1",
    start: reserved("a", "b"),
    command: commit("a", "b", 1n, 4_000),
    now: NOW,
    next: {
      ownerGeneration: "b",
      fencingToken: 2n,
      previousOwner: "a",
      pendingSuccessor: "",
      phase: "owned",
      transferStatus: "committed",
      acquiredAtMs: NOW,
      lastHeartbeatMs: NOW,
      expiresAtMs: NOW + 4_000,
      reason: "transfer_committed",
      version: 6n,
    },
    events: ["transfer_committed"],
    tokenAdvanced: true,
  },

  // abort
  {
    rule: "abort: absent → claim_not_found",
    start: undefined,
    command: abort("a", "b", 1n),
    code: "claim_not_found",
    next: "absent",
  },
  {
    rule: "abort: not reserved, owned by from → success, unchanged",
    start: owned("a"),
    command: abort("a", "b", 1n),
    now: NOW,
    next: "unchanged",
    events: [],
  },
  {
    rule: "abort: not reserved, owned by another → no_transfer",
    start: owned("x"),
    command: abort("a", "b", 1n),
    now: NOW,
    code: "no_transfer",
    next: "unchanged",
  },
  {
    rule: "abort: unowned → no_transfer",
    start: unowned("a"),
    command: abort("a", "b", 1n),
    now: NOW,
    code: "no_transfer",
    next: "unchanged",
  },
  {
    rule: "abort: token ≠ expected → stale_token (before the owner check)",
    start: reserved("a", "b"),
    command: abort("x", "b", 2n),
    now: NOW,
    code: "stale_token",
    next: "unchanged",
  },
  {
    rule: "abort: owner ≠ from → not_owner",
    start: reserved("a", "b"),
    command: abort("x", "b", 1n),
    now: NOW,
    code: "not_owner",
    next: "unchanged",
  },
  {
    rule: "abort: back to owned, token unchanged",
    start: reserved("a", "b"),
    command: abort("a", "b", 1n),
    now: NOW,
    next: {
      phase: "owned",
      ownerGeneration: "a",
      pendingSuccessor: "",
      transferStatus: "aborted",
      reason: "transfer_aborted",
      fencingToken: 1n,
      version: 6n,
    },
    events: ["transfer_aborted"],
    tokenAdvanced: false,
  },

  // release
  {
    rule: "release: absent → claim_not_found",
    start: undefined,
    command: release("a", 1n),
    code: "claim_not_found",
    next: "absent",
  },
  {
    rule: "release: token ≠ → stale_token, even for the owner",
    start: owned("a", 3n),
    command: release("a", 2n),
    now: NOW,
    code: "stale_token",
    next: "unchanged",
  },
  {
    rule: "release: a former owner's stale token cannot release a newer owner",
    start: owned("b", 2n, { previousOwner: "a" }),
    command: release("a", 1n),
    now: NOW,
    code: "stale_token",
    next: "unchanged",
  },
  {
    rule: "release: already released by the caller → success, unchanged",
    start: unowned("a"),
    command: release("a", 1n),
    now: NOW,
    next: "unchanged",
    events: [],
  },
  {
    rule: "release: unowned, previous owner is someone else → not_owner",
    start: unowned("x"),
    command: release("a", 1n),
    now: NOW,
    code: "not_owner",
    next: "unchanged",
  },
  {
    rule: "release: owner ≠ caller → not_owner",
    start: owned("x"),
    command: release("a", 1n),
    now: NOW,
    code: "not_owner",
    next: "unchanged",
  },
  {
    rule: "release: clears the owner, keeps the token",
    start: owned("a"),
    command: release("a", 1n),
    now: NOW,
    next: {
      phase: "unowned",
      ownerGeneration: "",
      previousOwner: "a",
      fencingToken: 1n,
      reason: "released",
      version: 6n,
    },
    events: ["released"],
    tokenAdvanced: false,
  },
  {
    rule: "release: a reserved claim drops the transfer",
    start: reserved("a", "b"),
    command: release("a", 1n),
    now: NOW,
    next: { phase: "unowned", pendingSuccessor: "", transferStatus: "", drainStatus: "", previousOwner: "a" },
    events: ["released"],
  },

  // get
  {
    rule: "get: absent → claim_not_found, nothing created",
    start: undefined,
    command: { kind: "get" },
    code: "claim_not_found",
    next: "absent",
  },
];

describe("decideClaim, rule by rule (SPEC §3)", () => {
  it.each(cases.map((c) => [c.rule, c] as const))("%s", (_rule, c) => {
    const step: ClaimStep = decideClaim(NAME, c.start, c.command, c.now ?? NOW);
    if (c.code === undefined) {
      expect(step.result.ok ? "ok" : step.result.refusal.code).toBe("ok");
    } else {
      expect(step.result.ok ? "ok" : step.result.refusal.code).toBe(c.code);
    }
    if (c.next === "absent") {
      expect(step.next).toBeUndefined();
      expect(step.changed).toBe(false);
    } else if (c.next === "unchanged") {
      expect(step.next).toEqual(c.start);
      expect(step.changed).toBe(false);
    } else if (c.next !== undefined) {
      expect(step.next).toMatchObject(c.next);
      expect(step.changed).toBe(true);
    }
    if (c.events !== undefined) expect(step.events.map((e) => e.reason)).toEqual(c.events);
    if (c.tokenAdvanced !== undefined) expect(step.tokenAdvanced).toBe(c.tokenAdvanced);
    // Every event carries its change's record and version, in order.
    step.events.forEach((e, i) => {
      expect(e.timeMs).toBe(c.now ?? NOW);
      if (i > 0) expect(e.claim.version).toBe(step.events[i - 1]!.claim.version + 1n);
    });
    if (step.events.length > 0 && step.result.ok) expect(step.events.at(-1)!.claim).toEqual(step.next);
    // A successful result is the record to persist.
    if (step.result.ok) expect(step.result.claim).toEqual(step.next);
  });

  it("claim_held carries the holder's record", () => {
    const step = decideClaim(NAME, owned("a"), acquire("b"), NOW);
    expect(step.result).toMatchObject({ ok: false, refusal: { code: "claim_held" }, claim: owned("a") });
  });

  it("the alarm deadline is 1 ms after expiresAtMs for held claims only", () => {
    expect(nextDeadlineMs(owned("a"))).toBe(T0 + TTL + 1);
    expect(nextDeadlineMs(reserved("a", "b"))).toBe(T0 + TTL + 1);
    expect(nextDeadlineMs(unowned("a", 1n, { expiresAtMs: T0 }))).toBeUndefined();
    expect(nextDeadlineMs(undefined)).toBeUndefined();
  });
});
