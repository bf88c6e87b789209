// The claims machine's bound rules (docs/protocol.md#sessions), with explicit times and lease
// views: binding needs a live lease, a bound claim never expires by the clock, the end of its
// epoch (a view naming another epoch, a dead lease, the generation's delivery) expires it.
import { describe, expect, it } from "vitest";
import { decideClaim, nextDeadlineMs } from "../../src/core/claim-machine.ts";
import { leasesWanted, type LeaseView } from "../../src/core/claim-leases.ts";
import type { ClaimCommand } from "../../src/core/claim-machine.ts";
import { NAME, NOW, T0, TTL, checkCase, owned, reserved, unowned, type Case } from "./claims-machine-cases.ts";

const LEASE_DEADLINE = T0 + 30_000;
const live = (epoch: bigint, expiresAtMs = LEASE_DEADLINE): LeaseView => ({ epoch, expiresAtMs, live: true });
const dead = (epoch: bigint): LeaseView => ({ epoch, expiresAtMs: 0, live: false });
const views = (entries: Record<string, LeaseView>) => new Map(Object.entries(entries));
const boundTo = (epoch: bigint) => ({ bound: true, leaseEpoch: epoch, expiresAtMs: LEASE_DEADLINE });

const acquireBound = (generationId: string): ClaimCommand => ({ kind: "acquire", generationId, bound: true });
const prepareBound = (from: string, to: string, token: bigint): ClaimCommand => ({
  kind: "prepare",
  fromGeneration: from,
  toGeneration: to,
  token,
  bound: true,
});
const commitBound = (from: string, to: string, expectedToken: bigint): ClaimCommand => ({
  kind: "commit",
  fromGeneration: from,
  toGeneration: to,
  expectedToken,
  bound: true,
});

const cases: Case[] = [
  {
    rule: "bound acquire of an unowned claim binds it to the live epoch, token+1, deadline = the lease's",
    start: unowned("x"),
    command: acquireBound("a"),
    views: views({ a: live(3n) }),
    next: { phase: "owned", ownerGeneration: "a", fencingToken: 2n, ...boundTo(3n) },
    events: ["acquired"],
    tokenAdvanced: true,
  },
  {
    rule: "bound acquire without a live lease is no_lease and changes nothing",
    start: unowned("x"),
    command: acquireBound("a"),
    views: views({ a: dead(3n) }),
    code: "no_lease",
    next: "unchanged",
  },
  {
    rule: "bound acquire with no view at all is no_lease",
    start: undefined,
    command: acquireBound("a"),
    code: "no_lease",
  },
  {
    rule: "bound acquire of another's claim is claim_held before no_lease",
    start: owned("b"),
    command: acquireBound("a"),
    views: views({ a: dead(1n) }),
    code: "claim_held",
    next: "unchanged",
  },
  {
    rule: "bound acquire by the owner of a claim bound to the live epoch changes nothing",
    start: owned("a", 1n, boundTo(2n)),
    command: acquireBound("a"),
    views: views({ a: live(2n) }),
    next: "unchanged",
  },
  {
    rule: "bound acquire by the owner of an unbound claim binds it (no event, token kept)",
    start: owned("a"),
    command: acquireBound("a"),
    views: views({ a: live(2n) }),
    next: { ...boundTo(2n), fencingToken: 1n, reason: "renewed" },
    events: [],
  },
  {
    rule: "a claim bound to an ended epoch expires first; the owner's new epoch then acquires it afresh",
    start: owned("a", 1n, boundTo(2n)),
    command: acquireBound("a"),
    views: views({ a: live(3n) }),
    next: { ...boundTo(3n), fencingToken: 2n, reason: "acquired" },
    events: ["expired", "acquired"],
    tokenAdvanced: true,
  },
  {
    rule: "an unbound acquire by the owner unbinds it, kept by its ttl again",
    start: owned("a", 1n, boundTo(2n)),
    command: { kind: "acquire", generationId: "a", ttlMs: TTL },
    next: { bound: false, leaseEpoch: 0n, expiresAtMs: NOW + TTL },
  },
  {
    rule: "renew of a bound claim answers its record without a change",
    start: owned("a", 1n, boundTo(2n)),
    command: { kind: "renew", generationId: "a", token: 1n, ttlMs: TTL },
    now: LEASE_DEADLINE + 5_000,
    next: "unchanged",
  },
  {
    rule: "renew of a bound claim still checks the token",
    start: owned("a", 2n, boundTo(2n)),
    command: { kind: "renew", generationId: "a", token: 1n, ttlMs: TTL },
    code: "stale_token",
  },
  {
    rule: "a bound claim never expires by the clock alone (its learned deadline may trail)",
    start: owned("a", 1n, boundTo(2n)),
    command: { kind: "get" },
    now: LEASE_DEADLINE + 60_000,
    next: "unchanged",
  },
  {
    rule: "a contender that learns the owner's epoch is dead expires the claim and takes it",
    start: owned("a", 1n, boundTo(2n)),
    command: { kind: "acquire", generationId: "b", ttlMs: TTL },
    now: LEASE_DEADLINE + 1,
    views: views({ a: dead(2n) }),
    next: { ownerGeneration: "b", fencingToken: 2n, bound: false, previousOwner: "a" },
    events: ["expired", "acquired"],
  },
  {
    rule: "a contender that learns the owner's epoch is live is refused claim_held",
    start: owned("a", 1n, boundTo(2n)),
    command: { kind: "acquire", generationId: "b", ttlMs: TTL },
    now: LEASE_DEADLINE + 1,
    views: views({ a: live(2n, LEASE_DEADLINE + 30_000) }),
    code: "claim_held",
  },
  {
    rule: "the generation's delivery of the end of the claim's epoch expires it",
    start: owned("a", 1n, boundTo(2n)),
    command: { kind: "lease_ended", generationId: "a", epoch: 2n },
    next: { phase: "unowned", previousOwner: "a", reason: "expired", bound: false, leaseEpoch: 0n, fencingToken: 1n },
    events: ["expired"],
  },
  {
    rule: "the end of a later epoch also ends an earlier one (a lost delivery)",
    start: owned("a", 1n, boundTo(2n)),
    command: { kind: "lease_ended", generationId: "a", epoch: 5n },
    next: { phase: "unowned", reason: "expired" },
    events: ["expired"],
  },
  {
    rule: "the end of an earlier epoch does not touch a claim bound to a later one",
    start: owned("a", 1n, boundTo(4n)),
    command: { kind: "lease_ended", generationId: "a", epoch: 3n },
    next: "unchanged",
  },
  {
    rule: "the end of another generation's epoch does not touch the claim",
    start: owned("a", 1n, boundTo(2n)),
    command: { kind: "lease_ended", generationId: "b", epoch: 2n },
    next: "unchanged",
  },
  {
    rule: "an unbound claim ignores a lease's end",
    start: owned("a"),
    command: { kind: "lease_ended", generationId: "a", epoch: 9n },
    next: "unchanged",
  },
  {
    rule: "a bound prepare needs the successor's live lease",
    start: owned("a", 1n, boundTo(2n)),
    command: prepareBound("a", "b", 1n),
    views: views({ b: dead(0n) }),
    code: "no_lease",
    next: "unchanged",
  },
  {
    rule: "a bound prepare keeps the old owner's binding and deadline",
    start: owned("a", 1n, boundTo(2n)),
    command: prepareBound("a", "b", 1n),
    views: views({ b: live(7n) }),
    next: { phase: "reserved", pendingSuccessor: "b", ...boundTo(2n) },
    events: ["transfer_prepared"],
  },
  {
    rule: "the old owner's epoch ending drops the reservation with the hold",
    start: reserved("a", "b", 1n, boundTo(2n)),
    command: { kind: "lease_ended", generationId: "a", epoch: 2n },
    next: { phase: "unowned", pendingSuccessor: "", transferStatus: "", reason: "expired" },
    events: ["expired"],
  },
  {
    rule: "a bound commit binds the claim to the successor's epoch, token+1",
    start: reserved("a", "b", 1n, boundTo(2n)),
    command: commitBound("a", "b", 1n),
    views: views({ b: live(7n, T0 + 50_000) }),
    next: { ownerGeneration: "b", fencingToken: 2n, bound: true, leaseEpoch: 7n, expiresAtMs: T0 + 50_000 },
    events: ["transfer_committed"],
    tokenAdvanced: true,
  },
  {
    rule: "a bound commit without the successor's live lease is no_lease; the reservation stays",
    start: reserved("a", "b", 1n, boundTo(2n)),
    command: commitBound("a", "b", 1n),
    views: views({ b: dead(7n) }),
    code: "no_lease",
    next: "unchanged",
  },
  {
    rule: "an unbound commit leaves the successor with its own ttl",
    start: reserved("a", "b", 1n, boundTo(2n)),
    command: { kind: "commit", fromGeneration: "a", toGeneration: "b", expectedToken: 1n, ttlMs: TTL },
    next: { ownerGeneration: "b", bound: false, leaseEpoch: 0n, expiresAtMs: NOW + TTL },
  },
  {
    rule: "release of a bound claim unbinds it",
    start: owned("a", 1n, boundTo(2n)),
    command: { kind: "release", generationId: "a", token: 1n },
    next: { phase: "unowned", bound: false, leaseEpoch: 0n, reason: "released" },
    events: ["released"],
  },
];

describe("claims machine: bound claims (docs/protocol.md#sessions)", () => {
  it.each(cases.map((c) => [c.rule, c] as const))("%s", (_rule, c) => checkCase(c));

  it("arms no alarm for a bound claim: its generation delivers the end", () => {
    expect(nextDeadlineMs(owned("a", 1n, boundTo(2n)))).toBeUndefined();
    expect(nextDeadlineMs(owned("a"))).toBe(T0 + TTL + 1);
  });

  it("asks a generation only where a decision needs it", () => {
    const bound = owned("a", 1n, boundTo(2n));
    expect(leasesWanted(undefined, acquireBound("a"), NOW)).toEqual({ bind: "a" });
    // A contender asks the bound owner only once the deadline the claim learned has passed.
    expect(leasesWanted(bound, { kind: "acquire", generationId: "b", ttlMs: TTL }, NOW)).toEqual({});
    expect(leasesWanted(bound, { kind: "acquire", generationId: "b", ttlMs: TTL }, LEASE_DEADLINE + 1)).toEqual({
      peek: "a",
    });
    expect(leasesWanted(bound, acquireBound("b"), LEASE_DEADLINE + 1)).toEqual({ bind: "b", peek: "a" });
    expect(leasesWanted(bound, prepareBound("a", "b", 1n), NOW)).toEqual({ peek: "b" });
    expect(leasesWanted(bound, commitBound("a", "b", 1n), NOW)).toEqual({ bind: "b" });
    // Renew, release, reads and unbound commands never ask.
    expect(leasesWanted(bound, { kind: "renew", generationId: "a", token: 1n, ttlMs: TTL }, NOW)).toEqual({});
    expect(leasesWanted(bound, { kind: "release", generationId: "a", token: 1n }, NOW)).toEqual({});
    expect(leasesWanted(bound, { kind: "get" }, LEASE_DEADLINE + 1)).toEqual({});
  });

  it("the record keeps the name it was decided for", () => {
    expect(decideClaim(NAME, undefined, acquireBound("a"), NOW, views({ a: live(1n) })).next?.name).toBe(NAME);
  });
});
