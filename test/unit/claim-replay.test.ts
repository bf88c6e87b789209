import { describe, expect, it } from "vitest";
import { planClaimReplay } from "../../src/core/claim-replay.ts";

describe("where a resuming claim watch starts", () => {
  it("sends a plain snapshot to a watcher that has seen nothing", () => {
    expect(planClaimReplay(undefined, 7n, 0n)).toEqual({ kind: "snapshot" });
  });

  it("replays the events above the version the watcher saw while history reaches it", () => {
    expect(planClaimReplay(3n, 7n, 0n)).toEqual({ kind: "events", afterVersion: 3n });
    expect(planClaimReplay(3n, 7n, 3n)).toEqual({ kind: "events", afterVersion: 3n });
    expect(planClaimReplay(7n, 7n, 5n)).toEqual({ kind: "events", afterVersion: 7n });
  });

  it("sends a truncated snapshot when history was pruned past it or it is ahead of the claim", () => {
    expect(planClaimReplay(2n, 7n, 3n)).toEqual({ kind: "truncated" });
    expect(planClaimReplay(8n, 7n, 0n)).toEqual({ kind: "truncated" });
  });
});
