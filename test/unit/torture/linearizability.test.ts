import { describe, expect, it } from "vitest";
import { MAX_SEGMENT_OPS, checkLinearizability } from "../../torture/check/linearizability.ts";
import { ok, op, owned, record, refused, unknown } from "./histories.ts";

const acquire = (g: string, id: string) => ({ generationId: g, ttlMs: 1000, operationId: id });

describe("linearizability checker", () => {
  it("accepts a history the claims machine explains, an unanswered acquire included", () => {
    const history = [
      op("get", "c", undefined, 0, 5, refused("claim_not_found", 404)),
      // Unanswered, but the later answers need it: it took effect.
      op("acquire", "c", acquire("g1", "a"), 10, 20, unknown),
      op(
        "acquire",
        "c",
        acquire("g2", "b"),
        30,
        40,
        refused("claim_held", 409, { claim: owned("g1", "1", "1", 15, 1000) }),
      ),
      op(
        "renew",
        "c",
        { generationId: "g1", token: "1", ttlMs: 1000, operationId: "c" },
        50,
        60,
        ok({
          claim: { ...owned("g1", "1", "2", 15, 1000), lastHeartbeatMs: 55, expiresAtMs: 1055, reason: "renewed" },
        }),
      ),
      // Expiry happens without anyone asking: the next acquire finds the claim free.
      op(
        "acquire",
        "c",
        acquire("g2", "d"),
        1100,
        1110,
        ok({
          claim: { ...owned("g2", "2", "4", 1105, 1000), previousOwner: "g1" },
        }),
      ),
    ];
    const result = checkLinearizability(history);
    expect(result.violations).toEqual([]);
    expect(result.gaveUp).toBe(0);
  });

  it("gives up on a segment too long to search (instead of overflowing the stack), then resynchronises", () => {
    // MAX_SEGMENT_OPS + 1 reads that all overlap: one segment. Then a lone answered acquire.
    const reads = Array.from({ length: MAX_SEGMENT_OPS + 1 }, (_, i) =>
      op("get", "c", undefined, i, 1_000_000, refused("claim_not_found", 404)),
    );
    const history = [
      ...reads,
      op(
        "acquire",
        "c",
        acquire("g1", "a"),
        2_000_000,
        2_000_010,
        ok({ claim: owned("g1", "1", "1", 2_000_005, 1000) }),
      ),
    ];
    const result = checkLinearizability(history);
    expect(result).toMatchObject({ violations: [], gaveUp: 1, gaveUpOps: MAX_SEGMENT_OPS + 1 });
    expect(result.segments).toBe(2);
  });

  it("reports a second holder while the first one's lease runs", () => {
    const history = [
      op("acquire", "c", acquire("g1", "a"), 0, 10, ok({ claim: owned("g1", "1", "1", 5, 1000) })),
      op("acquire", "c", acquire("g2", "b"), 20, 30, ok({ claim: owned("g2", "2", "2", 25, 1000) })),
    ];
    const result = checkLinearizability(history);
    expect(result.violations.map((v) => v.message)).toEqual([
      expect.stringMatching(
        /c: no linearization of 1 operations .* ending in state v1 owned g1\/1 .* acquire#\d+.*→v2 g2\/2/,
      ),
    ]);
  });

  it("reports a release answered for a token the claim never had", () => {
    const history = [
      op("acquire", "c", acquire("g1", "a"), 0, 10, ok({ claim: owned("g1", "1", "1", 5, 1000) })),
      op(
        "release",
        "c",
        { generationId: "g1", token: "7", operationId: "r" },
        20,
        30,
        ok({
          claim: record({ version: "2", fencingToken: "1", previousOwner: "g1", reason: "released" }),
        }),
      ),
    ];
    expect(checkLinearizability(history).violations).toHaveLength(1);
  });
});

describe("linearizability checker, instants", () => {
  it("tries the instant after the heartbeat: a same-owner acquire there is a change", () => {
    const renewed = (version: string, heartbeat: number) => ({
      claim: { ...owned("g1", "1", version, 0, 2000), lastHeartbeatMs: heartbeat, reason: "renewed" },
    });
    const history = [
      op("acquire", "c", acquire("g1", "a"), 0, 10, ok({ claim: owned("g1", "1", "1", 0, 2000) })),
      // Both answered within the same few milliseconds; the second one bumped the version.
      op("acquire", "c", { ...acquire("g1", "b"), ttlMs: 200 }, 20, 40, ok(renewed("2", 30))),
      op("acquire", "c", { ...acquire("g1", "c"), ttlMs: 300 }, 25, 45, ok(renewed("3", 35))),
    ];
    expect(checkLinearizability(history).violations).toEqual([]);
  });
});
