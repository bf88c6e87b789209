import { describe, expect, it } from "vitest";
import { checkMutualExclusion } from "../../torture/check/mutual-exclusion.ts";
import { ok, op, owned, record } from "./histories.ts";

const expired = (version: string, token: string, prev: string, deadline: number) =>
  record({ version, fencingToken: token, previousOwner: prev, expiresAtMs: deadline, reason: "expired" });

describe("mutual-exclusion checker", () => {
  it("accepts a new holder after the old one expired", () => {
    const history = [
      op("acquire", "c", { generationId: "g1", ttlMs: 1000 }, 0, 10, ok({ claim: owned("g1", "1", "1", 5, 1000) })),
      op("get", "c", undefined, 1100, 1110, ok({ claim: expired("2", "1", "g1", 1005) })),
      op(
        "acquire",
        "c",
        { generationId: "g2", ttlMs: 1000 },
        1200,
        1210,
        ok({ claim: owned("g2", "2", "3", 1205, 1000) }),
      ),
    ];
    expect(checkMutualExclusion(history).violations).toEqual([]);
  });

  it("reports a holder granted before the previous lease ran out", () => {
    const history = [
      op("acquire", "c", { generationId: "g1", ttlMs: 1000 }, 0, 10, ok({ claim: owned("g1", "1", "1", 5, 1000) })),
      op("get", "c", undefined, 1100, 1110, ok({ claim: expired("2", "1", "g1", 1005) })),
      op(
        "acquire",
        "c",
        { generationId: "g2", ttlMs: 1000 },
        900,
        1210,
        ok({ claim: owned("g2", "2", "3", 950, 1000) }),
      ),
    ];
    const { violations } = checkMutualExclusion(history);
    expect(violations.map((v) => v.message)).toEqual([
      expect.stringMatching(/token 2 acquired by g2 at 950 while token 1/),
    ]);
  });

  it("reports a write lease granted while the previous one was still acknowledged", () => {
    const grant = (leaseId: string, epoch: string, at: number, ttlMs: number) =>
      op(
        "leaseTry",
        "v/s",
        { participantId: "p", ttlMs },
        at - 5,
        at + 5,
        ok({ lease: { leaseId, epoch, participantId: "p", expiresAtMs: at + ttlMs } }, 201),
      );
    const clean = [grant("a", "1", 0, 500), grant("b", "2", 600, 500)];
    expect(checkMutualExclusion(clean).violations).toEqual([]);
    const overlapping = [grant("a", "1", 0, 500), grant("b", "2", 400, 500)];
    expect(checkMutualExclusion(overlapping).violations.map((v) => v.message)).toEqual([
      expect.stringMatching(/epoch 2 granted at 400 while epoch 1 was acknowledged until 500/),
    ]);
  });
});
