// shiftlock/fence's shared rules: tokens, fence keys, the header, FenceRejected, MemoryFence.
import { describe, expect, it } from "vitest";
import {
  FenceRejected,
  MemoryFence,
  claimFenceKey,
  fenceCredential,
  padToken,
  parseFenceHeader,
  scopeFenceKey,
  toTokenValue,
} from "../../src/client/fence/index.ts";

describe("fence tokens", () => {
  it("accept unsigned 64-bit bigints and canonical decimal strings only", () => {
    expect(toTokenValue("0")).toBe(0n);
    expect(toTokenValue("18446744073709551615")).toBe((1n << 64n) - 1n);
    for (const bad of ["", "-1", "007", "1.0", "0x1", "18446744073709551616", -1n, 1n << 64n]) {
      expect(() => toTokenValue(bad)).toThrow(TypeError);
    }
  });

  it("pad to 20 digits so that text order is numeric order", () => {
    expect(padToken(9n)).toBe("00000000000000000009");
    expect(padToken("10") > padToken(9n)).toBe(true);
    expect(padToken((1n << 64n) - 1n)).toBe("18446744073709551615");
  });
});

describe("fence keys and the Shiftlock-Fence header", () => {
  it("name namespace, kind and identity, each part percent-encoded", () => {
    expect(claimFenceKey("prod", "jobs/a b")).toBe("prod/claims/jobs%2Fa%20b");
    expect(scopeFenceKey("p=1", "vol", "store", "k/1")).toBe("p%3D1/scopes/vol/store/k%2F1");
    expect(claimFenceKey("a/claims", "b")).not.toBe(claimFenceKey("a", "claims/b"));
  });

  it("round-trip through the header value; malformed values are refused", () => {
    const credential = fenceCredential(claimFenceKey("prod", "ledger"), 42n);
    expect(credential.header).toBe("prod/claims/ledger=42");
    expect(parseFenceHeader(credential.header)).toEqual({ key: "prod/claims/ledger", token: 42n });
    for (const bad of ["", "=1", "k=", "k=01", "k=-1", "k=x", "a=b=1", "k=18446744073709551616"]) {
      expect(parseFenceHeader(bad)).toBeUndefined();
    }
  });
});

describe("MemoryFence", () => {
  it("refuses a lower token without running the write; equal and higher are accepted", () => {
    const fence = new MemoryFence();
    const log: string[] = [];
    fence.guard("k", 5n, () => log.push("a"));
    fence.guard("k", "5", () => log.push("b"));
    let refused: unknown;
    try {
      fence.guard("k", 4n, () => log.push("stale"));
    } catch (err) {
      refused = err;
    }
    expect(refused).toBeInstanceOf(FenceRejected);
    expect(refused).toMatchObject({ key: "k", presented: 4n, accepted: 5n, code: "fence_rejected" });
    expect((refused as FenceRejected).toJSON()).toEqual({
      error: { code: "fence_rejected", message: (refused as Error).message, key: "k", presented: "4", accepted: "5" },
    });
    fence.guard("k", 9n, () => log.push("c"));
    expect(log).toEqual(["a", "b", "c"]);
    expect(fence.accepted("k")).toBe(9n);
    expect(fence.accepted("other")).toBeUndefined();
    expect(fence.accept("other", 1n)).toBe(true);
    expect(fence.accept("k", 8n)).toBe(false);
  });

  it("leaves the fence where it was when the write throws", () => {
    const fence = new MemoryFence();
    fence.guard("k", 1n, () => undefined);
    expect(() =>
      fence.guard("k", 2n, () => {
        throw new Error("boom");
      }),
    ).toThrow("boom");
    expect(fence.accepted("k")).toBe(1n);
  });
});
