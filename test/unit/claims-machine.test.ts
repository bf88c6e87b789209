// The claims state machine, rule by rule in the order of docs/protocol.md#claim-rules with explicit times: expiry,
// acquire, renew and read. Transfers and release are in claims-machine-transfer.test.ts.
import { describe, expect, it } from "vitest";
import { decideClaim, nextDeadlineMs } from "../../src/core/claim-machine.ts";
import { MAX_FENCING_TOKEN } from "../../src/protocol/counter.ts";
import {
  LATE,
  NAME,
  NOW,
  T0,
  TTL,
  acquire,
  checkCase,
  owned,
  renew,
  reserved,
  unowned,
  type Case,
} from "./claims-machine-cases.ts";

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

  // get
  {
    rule: "get: absent → claim_not_found, nothing created",
    start: undefined,
    command: { kind: "get" },
    code: "claim_not_found",
    next: "absent",
  },
];

describe("decideClaim: expiry, acquire, renew, get (docs/protocol.md#claims)", () => {
  it.each(cases.map((c) => [c.rule, c] as const))("%s", (_rule, c) => checkCase(c));

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
