import { describe, expect, it } from "vitest";
import { checkClaimRecords } from "../../torture/check/claim-records.ts";
import { ok, op, owned, record } from "./histories.ts";

const acquire = { generationId: "g1", ttlMs: 1000, operationId: "o1" };

describe("claim-records checker", () => {
  it("accepts consistent records", () => {
    const history = [
      op("acquire", "c", acquire, 0, 10, ok({ claim: owned("g1", "1", "1", 5, 1000) })),
      op("get", "c", undefined, 20, 30, ok({ claim: owned("g1", "1", "1", 5, 1000) })),
    ];
    expect(checkClaimRecords(history)).toEqual([]);
  });

  it("reports two different records at one version", () => {
    const history = [
      op("acquire", "c", acquire, 0, 10, ok({ claim: owned("g1", "1", "1", 5, 1000) })),
      op("get", "c", undefined, 20, 30, ok({ claim: owned("g2", "1", "1", 5, 1000) })),
    ];
    const violations = checkClaimRecords(history);
    expect(violations.map((v) => v.message).join("\n")).toMatch(/version 1: op \d+ saw/);
  });

  it("reports a read that goes back in time", () => {
    const history = [
      op("acquire", "c", acquire, 0, 10, ok({ claim: owned("g1", "1", "2", 5, 1000) })),
      op("get", "c", undefined, 20, 30, ok({ claim: record({ version: "1", fencingToken: "0" }) })),
    ];
    expect(
      checkClaimRecords(history)
        .map((v) => v.message)
        .join("\n"),
    ).toMatch(/saw version 1 after .* version 2/);
  });

  it("reports a token held by two generations and a token going down", () => {
    const history = [
      op("get", "c", undefined, 0, 10, ok({ claim: owned("g1", "2", "3", 5, 1000) })),
      op("get", "c", undefined, 20, 30, ok({ claim: owned("g2", "2", "4", 25, 1000) })),
      op("get", "c", undefined, 40, 50, ok({ claim: owned("g3", "1", "5", 45, 1000) })),
    ];
    const messages = checkClaimRecords(history).map((v) => v.message);
    expect(messages.some((m) => /token 2 held by g1 .* and by g2/.test(m))).toBe(true);
    expect(messages.some((m) => /token 1 at version 5 .* below token 2/.test(m))).toBe(true);
  });
});
