import { describe, expect, it } from "vitest";
import { checkWatches, watchCoverage } from "../../torture/check/watches.ts";
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

  const reacquired = owned("g2", "2", "3", 35, 1000);
  /** Three changes answered (versions 1–3), and a first connection that saw the first two. */
  const threeChanges = [
    ...answers,
    op("acquire", "c", { generationId: "g2", ttlMs: 1000 }, 34, 36, ok({ claim: reacquired })),
    watchOpen("claim:c", 1, 0),
    watchMessage("claim:c", 1, 1, { type: "snapshot", claim: null }),
    watchMessage("claim:c", 1, 12, event("acquired", owned("g1", "1", "1", 5, 1000))),
    watchMessage("claim:c", 1, 32, event("released", released)),
  ];

  it("accepts a watcher that rewinds: the events after its resume point again, or a truncated snapshot", () => {
    const history = [
      ...threeChanges,
      // Resumes after version 1, though it saw 2: version 2 again, then live.
      watchOpen("claim:c", 2, 33, "1"),
      watchMessage("claim:c", 2, 33, event("released", released)),
      watchMessage("claim:c", 2, 37, event("acquired", reacquired)),
      // Resumes after 0 once the server no longer retains that far: the current record, truncated.
      watchOpen("claim:c", 3, 40, "0"),
      watchMessage("claim:c", 3, 41, { type: "snapshot", claim: reacquired, truncated: true }),
    ];
    expect(checkWatches(history)).toEqual([]);
    expect(watchCoverage(history)).toEqual({
      connections: 3,
      messages: 6,
      rewinds: 2,
      replayed: 1,
      truncated: 1,
      replays: 0,
    });
  });

  it("reports a rewound connection that skips a change, repeats one, or goes back in time", () => {
    const history = [
      ...threeChanges,
      watchMessage("claim:c", 1, 37, event("acquired", reacquired)),
      // Resumed after 1: version 2 is skipped (a gap), version 3 comes twice.
      watchOpen("claim:c", 2, 40, "1"),
      watchMessage("claim:c", 2, 41, event("acquired", reacquired)),
      watchMessage("claim:c", 2, 42, event("acquired", reacquired)),
      // Resumed after 0: an untruncated snapshot that skips ahead, of an older version than seen.
      watchOpen("claim:c", 3, 50, "0"),
      watchMessage("claim:c", 3, 51, { type: "snapshot", claim: released }),
    ];
    expect(checkWatches(history).map((v) => v.message)).toEqual([
      expect.stringMatching(/#2: event at version 3 after version 3/),
      expect.stringMatching(/#3: snapshot at version 2 after version 3/),
      expect.stringMatching(/#3: resumed after 0, got a snapshot at 2 without truncated/),
      expect.stringMatching(/change at 2 never delivered \(stream covered 1\.\.3\)/),
    ]);
  });

  /** An acknowledged publish's answer, and the scope watch event of a publish (root = generation). */
  const snap = (generation: string, root: unknown = generation) =>
    ok({ volumeId: "v", objectStoreId: "s", generation, root });
  const publish = (generation: string, extra: Record<string, unknown> = {}) => ({
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
    ...extra,
  });

  it("reports a scope stream that skips an acknowledged publish", () => {
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

  it("judges a rewound scope connection from its afterGeneration: replayed publishes pass, a skipped one does not", () => {
    const acked = [1, 2, 3].map((g) =>
      op("publish", "v/s", { root: String(g) }, g * 10, g * 10 + 5, snap(String(g)), { leaseId: "a" }),
    );
    const first = [
      watchOpen("scope:v/s", 1, 0),
      watchMessage("scope:v/s", 1, 1, { type: "ready", generation: "0" }),
      ...[1, 2, 3].map((g) => watchMessage("scope:v/s", 1, g * 10 + 1, publish(String(g)))),
    ];
    // Connection 2 resumes after generation 1, below the 3 it already had.
    const resumed = [
      ...acked,
      ...first,
      watchOpen("scope:v/s", 2, 40, "1"),
      watchMessage("scope:v/s", 2, 41, { type: "ready", generation: "3" }),
    ];
    const clean = [
      ...resumed,
      watchMessage("scope:v/s", 2, 42, publish("2")),
      watchMessage("scope:v/s", 2, 43, publish("3")),
      watchOpen("scope:v/s", 3, 50, "0"),
      watchMessage("scope:v/s", 3, 51, { type: "ready", generation: "3" }),
      watchMessage("scope:v/s", 3, 52, publish("3", { replay: true })),
    ];
    expect(checkWatches(clean)).toEqual([]);
    expect(watchCoverage(clean)).toMatchObject({ rewinds: 2, replayed: 2, replays: 1 });
    const skipped = [...resumed, watchMessage("scope:v/s", 2, 43, publish("3"))];
    expect(checkWatches(skipped).map((v) => v.message)).toEqual([
      expect.stringMatching(/scope:v\/s: change at 2 never delivered \(stream covered 1\.\.3\)/),
    ]);
  });
});
