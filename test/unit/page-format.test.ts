// The pages' pure formatting: durations as people read them, and the dashboard's deadline
// cell, which never says "expired" for a held claim (src/pages/format.ts, src/pages/ui/expiry.ts).
import { describe, expect, it } from "vitest";
import { formatAgo, formatDuration } from "../../src/pages/format.ts";
import { expiryView } from "../../src/pages/ui/expiry.ts";
import type { ClaimRecord } from "../../src/protocol/claims.ts";

describe("formatDuration", () => {
  it.each([
    [0, "0.0 s"],
    [-5, "0.0 s"],
    [950, "0.9 s"],
    [4_290, "4.2 s"],
    [9_999, "9.9 s"],
    [10_000, "10 s"],
    [59_999, "59 s"],
    [60_000, "1 min"],
    [192_000, "3 min 12 s"],
    [599_999, "9 min 59 s"],
    [3_582_000, "59 min"],
    [3_600_000, "1 h"],
    [7_500_000, "2 h 5 min"],
    [86_400_000, "1 d"],
    [97_200_000, "1 d 3 h"],
  ])("%i ms reads %s", (ms, text) => {
    expect(formatDuration(ms)).toBe(text);
  });

  it("never shows more time than is left (truncates)", () => {
    expect(formatDuration(3_599_999)).toBe("59 min");
    expect(formatDuration(119_999)).toBe("1 min 59 s");
  });

  it("says how long ago", () => {
    expect(formatAgo(1_000, 1_500)).toBe("just now");
    expect(formatAgo(0, 125_000)).toBe("2 min 5 s ago");
  });
});

describe("expiryView", () => {
  const owned: ClaimRecord = {
    name: "c",
    ownerGeneration: "g",
    fencingToken: 1n,
    phase: "owned",
    acquiredAtMs: 0,
    expiresAtMs: 10_000,
    previousOwner: "",
    pendingSuccessor: "",
    drainStatus: "",
    transferStatus: "",
    lastHeartbeatMs: 0,
    reason: "acquired",
    version: 1n,
    bound: false,
    leaseEpoch: 0n,
  };

  it("counts down to a held claim's deadline", () => {
    expect(expiryView(owned, 7_000)).toEqual({ text: "3.0 s", due: false });
  });

  it("says checking, not expired, once a held claim's known deadline passed (renewals send no event)", () => {
    for (const phase of ["owned", "reserved", "draining"] as const) {
      expect(expiryView({ ...owned, phase }, 10_000)).toEqual({ text: "checking…", due: true });
      expect(expiryView({ ...owned, phase }, 99_000).text).not.toContain("expired");
    }
  });

  it("shows no deadline for an unheld or unknown claim", () => {
    expect(expiryView({ ...owned, phase: "unowned", reason: "expired" }, 99_000)).toEqual({ text: "—", due: false });
    expect(expiryView(null, 0)).toEqual({ text: "—", due: false });
  });

  it("a bound claim counts down to its owner's lease as the generation answered it", () => {
    const bound: ClaimRecord = { ...owned, bound: true, leaseEpoch: 3n, expiresAtMs: 5_000 };
    // Not read yet: checking, whatever the claim's own (trailing) deadline says.
    expect(expiryView(bound, 1_000)).toEqual({ text: "checking…", due: true });
    expect(expiryView(bound, 1_000, { epoch: 3n, expiresAtMs: 13_000 })).toEqual({ text: "12 s (lease)", due: false });
    expect(expiryView(bound, 13_000, { epoch: 3n, expiresAtMs: 13_000 })).toEqual({ text: "checking…", due: true });
    // The generation is at another epoch, or holds no lease: the claim's epoch is over (its expiry is coming).
    expect(expiryView(bound, 1_000, { epoch: 4n, expiresAtMs: 13_000 }).due).toBe(true);
    expect(expiryView(bound, 1_000, { epoch: 3n, expiresAtMs: 0 }).due).toBe(true);
  });
});
