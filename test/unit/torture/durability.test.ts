import { describe, expect, it } from "vitest";
import { checkDurability } from "../../torture/check/durability.ts";
import { fault, ok, op, owned, refused } from "./histories.ts";

const snapshot = (generation: string, root: unknown) => ok({ volumeId: "v", objectStoreId: "s", generation, root });
const generation = (state: string) =>
  ok({ generation: { id: "g", service: "s", instanceId: "i", state, startedAtMs: 1, updatedAtMs: 1, reason: "" } });

describe("durability checker", () => {
  const beforeCrash = [
    op("acquire", "c", { generationId: "g1", ttlMs: 1000 }, 0, 10, ok({ claim: owned("g1", "1", "2", 5, 1000) })),
    op("publish", "v/s", { root: "r" }, 0, 10, snapshot("3", "r"), { leaseId: "l" }),
    op("updateGeneration", "g", { state: "active" }, 0, 10, generation("active")),
    fault("crash", 100),
    fault("restart", 200),
  ];

  it("accepts a restart that kept everything", () => {
    const history = [
      ...beforeCrash,
      op("get", "c", undefined, 300, 310, ok({ claim: owned("g1", "1", "2", 5, 1000) })),
      op("snapshot", "v/s", undefined, 300, 310, snapshot("3", "r")),
      op("getGeneration", "g", undefined, 300, 310, generation("retired")),
    ];
    expect(checkDurability(history)).toEqual([]);
  });

  it("reports what the restart lost", () => {
    const history = [
      ...beforeCrash,
      op("get", "c", undefined, 300, 310, ok({ claim: owned("g1", "1", "1", 5, 1000) })),
      op("snapshot", "v/s", undefined, 300, 310, snapshot("2", "old")),
      op("getGeneration", "g", undefined, 300, 310, generation("joining")),
      op("updateGeneration", "g", { state: "failed" }, 300, 310, refused("generation_not_found", 404)),
    ];
    const messages = checkDurability(history).map((v) => v.message);
    expect(messages).toEqual([
      expect.stringMatching(/crash 1: c at version 1 .* version 2 token 1 was seen before/),
      expect.stringMatching(/crash 1: generation g in joining .* unreachable from acknowledged active/),
      expect.stringMatching(/crash 1: generation g \(acknowledged active\) not found/),
      expect.stringMatching(/crash 1: v\/s snapshot .* generation 2 .* generation 3 root "r" was acknowledged/),
    ]);
  });
});
