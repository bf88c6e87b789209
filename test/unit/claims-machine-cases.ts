// Fixtures and the checker shared by the table-driven machine tests (claims-machine*.test.ts):
// record builders at explicit times, command builders, and one assertion routine per case.
import { expect } from "vitest";
import { decideClaim, emptyClaim } from "../../src/core/claim-machine.ts";
import type { ClaimCommand, ClaimStep } from "../../src/core/claim-machine.ts";
import type { ClaimRecord } from "../../src/protocol/claims.ts";
import type { LeaseViews } from "../../src/core/claim-leases.ts";

export const NAME = "orders";
export const T0 = 1_000_000;
export const TTL = 1_000;

/** A claim owned by `owner` with `token`, acquired at T0 and expiring at T0 + TTL. */
export function owned(owner: string, token = 1n, patch: Partial<ClaimRecord> = {}): ClaimRecord {
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

export function reserved(owner: string, successor: string, token = 1n, patch: Partial<ClaimRecord> = {}): ClaimRecord {
  return owned(owner, token, {
    phase: "reserved",
    pendingSuccessor: successor,
    transferStatus: "prepared",
    drainStatus: "complete",
    reason: "transfer_prepared",
    ...patch,
  });
}

export function unowned(previousOwner: string, token = 1n, patch: Partial<ClaimRecord> = {}): ClaimRecord {
  return { ...emptyClaim(NAME), previousOwner, fencingToken: token, reason: "released", version: 5n, ...patch };
}

export interface Case {
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
  /** The lease views the command is decided with (bound claims). */
  views?: LeaseViews;
}

export const acquire = (generationId: string, ttlMs = TTL, allowEmptyOnly?: boolean): ClaimCommand => ({
  kind: "acquire",
  generationId,
  ttlMs,
  ...(allowEmptyOnly === undefined ? {} : { allowEmptyOnly }),
});
export const renew = (generationId: string, token: bigint, ttlMs = TTL): ClaimCommand => ({
  kind: "renew",
  generationId,
  token,
  ttlMs,
});
export const prepare = (from: string, to: string, token: bigint, ttlMs = TTL): ClaimCommand => ({
  kind: "prepare",
  fromGeneration: from,
  toGeneration: to,
  token,
  ttlMs,
});
export const commit = (from: string, to: string, expectedToken: bigint, ttlMs = TTL): ClaimCommand => ({
  kind: "commit",
  fromGeneration: from,
  toGeneration: to,
  expectedToken,
  ttlMs,
});
export const abort = (from: string, to: string, expectedToken: bigint): ClaimCommand => ({
  kind: "abort",
  fromGeneration: from,
  toGeneration: to,
  expectedToken,
});
export const release = (generationId: string, token: bigint): ClaimCommand => ({
  kind: "release",
  generationId,
  token,
});

export const NOW = T0 + 10;
export const LATE = T0 + TTL + 1;

/** Decide `c` and check every expectation it states, plus the invariants every step keeps. */
export function checkCase(c: Case): void {
  const step: ClaimStep = decideClaim(NAME, c.start, c.command, c.now ?? NOW, c.views);
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
}
