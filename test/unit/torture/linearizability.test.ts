import { describe, expect, it } from "vitest";
import { checkLinearizability } from "../../torture/check/linearizability.ts";
import { ok, op, owned, record, refused, unknown } from "./histories.ts";

const acquire = (g: string, id: string) => ({ generationId: g, ttlMs: 1000, operationId: id });
const renew = (g: string, token: string, id: string) => ({ generationId: g, token, ttlMs: 1000, operationId: id });
const renewed = (g: string, token: string, version: string, acquiredAt: number, at: number) => ({
  claim: {
    ...owned(g, token, version, acquiredAt, 1000),
    lastHeartbeatMs: at,
    expiresAtMs: at + 1000,
    reason: "renewed",
  },
});
const messages = (history: Parameters<typeof checkLinearizability>[0]): string[] =>
  checkLinearizability(history).violations.map((v) => v.message);

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
      op("renew", "c", renew("g1", "1", "c"), 50, 60, ok(renewed("g1", "1", "2", 15, 55))),
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
    expect(result).toMatchObject({ gaveUp: 0, unchecked: 0, checked: 5 });
  });

  it("places a refusal on a state an unanswered operation led to after the last answered version", () => {
    const history = [
      op("acquire", "c", acquire("g1", "a"), 0, 10, ok({ claim: owned("g1", "1", "1", 5, 100_000) })),
      op("release", "c", { generationId: "g1", token: "1", operationId: "r" }, 20, 30, unknown),
      // Only after the release took effect can the holder's renew be refused so.
      op("renew", "c", renew("g1", "1", "b"), 40, 50, refused("not_owner")),
    ];
    expect(checkLinearizability(history)).toMatchObject({ violations: [], unchecked: 0 });
  });

  it("judges a long stretch of overlapping operations without giving up", () => {
    // 1,500 renews, each overlapping the next hundred, and as many refused acquires
    // spanning all of them: one unbroken stretch, which the version order makes short work of.
    const n = 1_500;
    const history = [
      op("acquire", "c", acquire("g1", "a"), 0, 10, ok({ claim: owned("g1", "1", "1", 5, 1000) })),
      ...Array.from({ length: n }, (_, i) =>
        op("renew", "c", renew("g1", "1", `r${i}`), 20 + i, 120 + i, ok(renewed("g1", "1", String(i + 2), 5, 21 + i))),
      ),
      ...Array.from({ length: n }, (_, i) =>
        op("acquire", "c", acquire("g2", `x${i}`), 15 + i, 20 + n, refused("claim_held")),
      ),
    ];
    const result = checkLinearizability(history);
    expect(result).toMatchObject({ violations: [], gaveUp: 0, unchecked: 0, checked: 2 * n + 1 });
  });

  it("reports a second holder while the first one's lease runs", () => {
    const history = [
      op("acquire", "c", acquire("g1", "a"), 0, 10, ok({ claim: owned("g1", "1", "1", 5, 1000) })),
      op("acquire", "c", acquire("g2", "b"), 20, 30, ok({ claim: owned("g2", "2", "2", 25, 1000) })),
    ];
    expect(messages(history)).toEqual([
      expect.stringMatching(/^c: nothing produces v2 from state v1 owned g1\/1 .*acquire#\d+.*→v2 g2\/2/),
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
    expect(messages(history)).toHaveLength(1);
  });
});

describe("linearizability checker, anchored on versions: planted violations", () => {
  it("two successes with the same version and different records", () => {
    const history = [
      op("acquire", "c", acquire("g1", "a"), 0, 10, ok({ claim: owned("g1", "1", "1", 5, 1000) })),
      op("acquire", "c", acquire("g2", "b"), 2, 12, ok({ claim: owned("g2", "1", "1", 7, 1000) })),
    ];
    expect(messages(history)).toEqual([
      expect.stringMatching(/^c: two successes answer version 1 with different records/),
    ]);
  });

  it("the same version with the same owner but another deadline", () => {
    const history = [
      op("acquire", "c", acquire("g1", "a"), 0, 10, ok({ claim: owned("g1", "1", "1", 5, 1000) })),
      op("get", "c", undefined, 20, 30, ok({ claim: owned("g1", "1", "1", 5, 1200) })),
    ];
    expect(messages(history)).toEqual([expect.stringMatching(/two successes answer version 1/)]);
  });

  it("a version gap no unanswered operation and no expiry explains", () => {
    const history = [
      op("acquire", "c", acquire("g1", "a"), 0, 10, ok({ claim: owned("g1", "1", "1", 5, 1000) })),
      op("renew", "c", renew("g1", "1", "b"), 20, 30, ok(renewed("g1", "1", "3", 5, 25))),
    ];
    expect(messages(history)).toEqual([
      expect.stringMatching(/^c: version gap: nothing explains v2\.\.v2 and then v3/),
    ]);
    // The same gap with an unanswered renew that may have taken effect in it is explained.
    const explained = [...history.slice(0, 1), op("renew", "c", renew("g1", "1", "u"), 12, 18, unknown), history[1]!];
    expect(messages(explained)).toEqual([]);
  });

  it("real-time order inverted: a read of the old version begun after the change was answered", () => {
    const history = [
      op("acquire", "c", acquire("g1", "a"), 0, 10, ok({ claim: owned("g1", "1", "1", 5, 1000) })),
      op("renew", "c", renew("g1", "1", "b"), 20, 30, ok(renewed("g1", "1", "2", 5, 25))),
      // Begun 30 ms after the renew was answered: beyond the clock slack of each side.
      op("get", "c", undefined, 60, 70, ok({ claim: owned("g1", "1", "1", 5, 1000) })),
    ];
    expect(messages(history)).toEqual([
      expect.stringMatching(/^c: real-time order inverted: renew#\d+.*→v2 .* completed before get#\d+.*→v1 .* began/),
    ]);
  });

  it("a refusal no state explains", () => {
    const history = [
      op("acquire", "c", acquire("g1", "a"), 0, 10, ok({ claim: owned("g1", "1", "1", 5, 1000) })),
      // The holder, with its own token, while nothing else happened: renew cannot refuse it.
      op("renew", "c", renew("g1", "1", "b"), 20, 30, refused("not_owner")),
      op("get", "c", undefined, 40, 50, ok({ claim: owned("g1", "1", "1", 5, 1000) })),
    ];
    expect(messages(history)).toEqual([expect.stringMatching(/^c: no state explains a refusal: renew#\d+/)]);
  });

  it("a claim_held refusal carrying a record the claim never had", () => {
    const history = [
      op("acquire", "c", acquire("g1", "a"), 0, 10, ok({ claim: owned("g1", "1", "1", 5, 1000) })),
      op(
        "acquire",
        "c",
        acquire("g2", "b"),
        20,
        30,
        refused("claim_held", 409, { claim: owned("g9", "1", "1", 5, 1000) }),
      ),
    ];
    expect(messages(history)).toEqual([
      expect.stringMatching(/^c: no state explains a refusal: acquire#\d+.*claim_held/),
    ]);
  });

  it("refusals out of real-time order: one saw the new state, a later one the old", () => {
    const released = record({ version: "2", fencingToken: "1", previousOwner: "g1", reason: "released" });
    const history = [
      op("acquire", "c", acquire("g1", "a"), 0, 10, ok({ claim: owned("g1", "1", "1", 5, 100_000) })),
      // The release took effect some time after 50 (unanswered); a read saw it at 300.
      op("release", "c", { generationId: "g1", token: "1", operationId: "r" }, 50, 60, unknown),
      op("get", "c", undefined, 300, 310, ok({ claim: released })),
      // Only after the release can the holder's renew be not_owner …
      op("renew", "c", renew("g1", "1", "b"), 60, 70, refused("not_owner")),
      // … and only before it can another acquire be claim_held; yet this one began later.
      op("acquire", "c", acquire("g2", "x"), 90, 100, refused("claim_held")),
    ];
    expect(messages(history)).toEqual([
      expect.stringMatching(/^c: no state explains a refusal: acquire#\d+.*claim_held/),
    ]);
    // In the other order both fit.
    const swapped = [
      ...history.slice(0, 3),
      { ...history[3]!, invokeMs: 90, completeMs: 100 },
      { ...history[4]!, invokeMs: 60, completeMs: 70 },
    ];
    expect(messages(swapped)).toEqual([]);
  });

  it("gives up a gap past the step budget: counted unchecked, not a violation, and resumes at the next version", () => {
    // Forty unanswered renews may each have taken effect; the read at v8 shows a record none
    // of their orders reaches, and trying them all is past the budget.
    const history = [
      op("acquire", "c", acquire("g1", "a"), 0, 10, ok({ claim: owned("g1", "1", "1", 5, 100_000) })),
      ...Array.from({ length: 40 }, (_, i) => op("renew", "c", renew("g1", "1", `u${i}`), 20 + i, 30 + i, unknown)),
      op(
        "get",
        "c",
        undefined,
        500,
        510,
        ok({ claim: record({ version: "8", fencingToken: "1", reason: "released" }) }),
      ),
      op(
        "get",
        "c",
        undefined,
        600,
        610,
        ok({ claim: record({ version: "8", fencingToken: "1", reason: "released" }) }),
      ),
      // From v8's record on, the check resumes: a second holder is caught.
      op("acquire", "c", acquire("g2", "b"), 700, 710, ok({ claim: owned("g2", "2", "9", 705, 1000) })),
      op("acquire", "c", acquire("g3", "c"), 720, 730, ok({ claim: owned("g3", "3", "10", 725, 1000) })),
    ];
    const result = checkLinearizability(history);
    expect(result).toMatchObject({ gaveUp: 1, unchecked: 2 });
    expect(result.violations.map((v) => v.message)).toEqual([expect.stringMatching(/^c: nothing produces v10 /)]);
  });
});

describe("linearizability checker, instants", () => {
  it("tries the instant after the heartbeat: a same-owner acquire there is a change", () => {
    const renewedAt = (version: string, heartbeat: number) => ({
      claim: { ...owned("g1", "1", version, 0, 2000), lastHeartbeatMs: heartbeat, reason: "renewed" },
    });
    const history = [
      op("acquire", "c", acquire("g1", "a"), 0, 10, ok({ claim: owned("g1", "1", "1", 0, 2000) })),
      // Both answered within the same few milliseconds; the second one bumped the version.
      op("acquire", "c", { ...acquire("g1", "b"), ttlMs: 200 }, 20, 40, ok(renewedAt("2", 30))),
      op("acquire", "c", { ...acquire("g1", "c"), ttlMs: 300 }, 25, 45, ok(renewedAt("3", 35))),
    ];
    expect(checkLinearizability(history).violations).toEqual([]);
  });
});
