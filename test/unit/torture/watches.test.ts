import { describe, expect, it } from "vitest";
import { checkWatches } from "../../torture/check/watches.ts";
import { ok, op, owned, record, watchMessage, watchOpen } from "./histories.ts";

const released = record({ version: "2", fencingToken: "1", previousOwner: "g1", reason: "released" });
const event = (reason: string, claim: unknown) => ({ type: "event", reason, claim, timeMs: 0 });

describe("watches checker", () => {
  const answers = [
    op("acquire", "c", { generationId: "g1", ttlMs: 1000 }, 0, 10, ok({ claim: owned("g1", "1", "1", 5, 1000) })),
    op("release", "c", { generationId: "g1", token: "1" }, 20, 30, ok({ claim: released })),
  ];

  it("accepts a stream resumed without gap or duplicate", () => {
    const history = [
      ...answers,
      watchOpen("claim:c", 1, 0),
      watchMessage("claim:c", 1, 1, { type: "snapshot", claim: null }),
      watchMessage("claim:c", 1, 12, event("acquired", owned("g1", "1", "1", 5, 1000))),
      watchOpen("claim:c", 2, 15, "1"),
      watchMessage("claim:c", 2, 32, event("released", released)),
    ];
    expect(checkWatches(history)).toEqual([]);
  });

  it("reports a change the stream skipped and an event delivered twice", () => {
    const history = [
      ...answers,
      watchOpen("claim:c", 1, 0),
      watchMessage("claim:c", 1, 1, { type: "snapshot", claim: null }),
      watchMessage("claim:c", 1, 12, event("acquired", owned("g1", "1", "1", 5, 1000))),
      watchMessage("claim:c", 1, 13, event("acquired", owned("g1", "1", "1", 5, 1000))),
      watchMessage("claim:c", 1, 40, event("acquired", owned("g2", "2", "3", 35, 1000))),
    ];
    expect(checkWatches(history).map((v) => v.message)).toEqual([
      expect.stringMatching(/event at version 1 after version 1/),
      expect.stringMatching(/change at 2 never delivered/),
    ]);
  });

  it("reports a scope stream that skips an acknowledged publish", () => {
    const snap = (generation: string, root: unknown) => ok({ volumeId: "v", objectStoreId: "s", generation, root });
    const publish = (generation: string) => ({
      type: "event",
      processId: "p",
      volumeId: "v",
      objectStoreId: "s",
      generation,
      wantLock: false,
      unlocked: false,
      rootChanged: generation,
      keyPrefixChanged: "",
      fallbackReason: "",
    });
    const history = [
      op("publish", "v/s", { root: "1" }, 0, 10, snap("1", "1"), { leaseId: "a" }),
      op("publish", "v/s", { root: "2" }, 20, 30, snap("2", "2"), { leaseId: "a" }),
      op("publish", "v/s", { root: "3" }, 40, 50, snap("3", "3"), { leaseId: "a" }),
      watchMessage("scope:v/s", 1, 0, { type: "ready", generation: "0" }),
      watchMessage("scope:v/s", 1, 11, publish("1")),
      watchMessage("scope:v/s", 1, 51, publish("3")),
    ];
    expect(checkWatches(history).map((v) => v.message)).toEqual([
      expect.stringMatching(/scope:v\/s: change at 2 never delivered/),
    ]);
  });
});
