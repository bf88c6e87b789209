// A claim's Lease and a coord WriteLease hand out the fence to write under: key, token, header.
import { describe, expect, it } from "vitest";
import { MemoryClaimsBackend } from "../../src/client/claims/memory-claims-backend.ts";
import { MemoryCoordinator } from "../../src/client/coord/memory-coord.ts";
import { MemoryFence, parseFenceHeader } from "../../src/client/fence/index.ts";
import { GenerationSession } from "../../src/client/handoff/index.ts";

describe("lease fences", () => {
  it("a claim's lease: key {ns}/claims/{name}, its token, and the header carrying both", async () => {
    const backend = new MemoryClaimsBackend({ namespace: "prod" });
    const session = await GenerationSession.open({ service: "billing", instanceId: "pod-1", backend });
    try {
      const lease = await session.claim("ledger/eu").tryAcquire();
      expect(lease.fence).toEqual({
        key: "prod/claims/ledger%2Feu",
        token: lease.token,
        header: `prod/claims/ledger%2Feu=${lease.token}`,
      });
      expect(parseFenceHeader(lease.fence.header)).toEqual({ key: lease.fence.key, token: lease.token });
      const fence = new MemoryFence();
      expect(fence.guard(lease.fence.key, lease.fence.token, () => "written")).toBe("written");
    } finally {
      await session.close();
    }
  });

  it("a write lease: key {ns}/scopes/{volumeId}/{objectStoreId}/{key} and its epoch", async () => {
    const coord = new MemoryCoordinator({ namespace: "prod" });
    const got = await coord.tryAcquireWriteLease({ volumeId: "vol 1", key: "a/b", participantId: "p" });
    expect(got.acquired).toBe(true);
    const lease = got.lease!;
    try {
      expect(lease.fence.key).toBe("prod/scopes/vol%201//a%2Fb");
      expect(lease.fence.token).toBe(lease.epoch);
      expect(lease.fence.header).toBe(`prod/scopes/vol%201//a%2Fb=${lease.epoch}`);
    } finally {
      await lease.release();
    }
  });
});
