import { describe, expect, it } from "vitest";
import { checkCoord } from "../../torture/check/coord.ts";
import { ok, op } from "./histories.ts";

const snapshot = (generation: string, root: unknown) => ok({ volumeId: "v", objectStoreId: "s", generation, root });
const grant = (leaseId: string, epoch: string, at: number) =>
  op(
    "leaseTry",
    "v/s",
    { participantId: "p", ttlMs: 500 },
    at,
    at + 5,
    ok({ lease: { leaseId, epoch, participantId: "p", expiresAtMs: at + 500 } }, 201),
  );

describe("coord checker", () => {
  it("accepts increasing epochs and generations, visible in snapshots", () => {
    const history = [
      grant("a", "1", 0),
      op("publish", "v/s", { root: "x" }, 10, 15, snapshot("1", "x"), { leaseId: "a" }),
      op("publish", "v/s", { expectedGeneration: "1" }, 20, 25, snapshot("2", "x"), { leaseId: "a" }),
      op("snapshot", "v/s", undefined, 30, 35, snapshot("2", "x")),
      grant("b", "2", 600),
    ];
    expect(checkCoord(history)).toEqual([]);
  });

  it("reports an epoch reused, a generation going back and a publish not visible", () => {
    const history = [
      grant("a", "2", 0),
      op("publish", "v/s", { root: "x" }, 10, 15, snapshot("3", "x"), { leaseId: "a" }),
      op("publish", "v/s", {}, 20, 25, snapshot("3", "x"), { leaseId: "a" }),
      op("snapshot", "v/s", undefined, 30, 35, snapshot("2", "old")),
      grant("b", "2", 600),
    ];
    const messages = checkCoord(history).map((v) => v.message);
    expect(messages).toEqual([
      expect.stringMatching(/epoch 2 answered twice/),
      expect.stringMatching(/epoch 2 .* not above 2/),
      expect.stringMatching(/published generation 3 answered twice/),
      expect.stringMatching(/published generation 3 .* not above 3/),
      expect.stringMatching(/snapshot op \d+ shows generation 2 root "old" after publish op \d+ of generation 3/),
    ]);
  });
});
