import { describe, expect, it } from "vitest";
import { type FenceWrite, checkFences } from "../../torture/check/fences.ts";

function write(
  token: number,
  sentMs: number,
  answeredMs: number,
  outcome: FenceWrite["outcome"],
  fence = "ns/claims/c",
): FenceWrite {
  return { resource: "d1", fence, token: BigInt(token), sentMs, answeredMs, outcome };
}

describe("fence checker", () => {
  it("accepts a history where tokens only rise and refusals follow a higher accepted token", () => {
    const history = [
      write(1, 0, 5, "accepted"),
      write(1, 6, 9, "accepted"),
      write(2, 10, 12, "accepted"),
      write(1, 13, 15, "refused"),
      write(1, 14, 16, "unknown"),
      write(2, 20, 22, "accepted"),
    ];
    expect(checkFences(history)).toEqual([]);
  });

  it("accepts overlapping writes in either order (neither answered before the other was sent)", () => {
    expect(checkFences([write(3, 0, 10, "accepted"), write(2, 5, 8, "accepted")])).toEqual([]);
  });

  it("reports a lower token accepted after a higher one (planted)", () => {
    const violations = checkFences([write(5, 0, 5, "accepted"), write(4, 6, 8, "accepted")]);
    expect(violations.map((v) => v.message)).toEqual([expect.stringMatching(/accepted token 4 .* after token 5/)]);
  });

  it("reports a refusal with no higher token accepted (planted)", () => {
    const violations = checkFences([write(5, 0, 5, "accepted"), write(5, 6, 8, "refused")]);
    expect(violations.map((v) => v.message)).toEqual([expect.stringMatching(/refused token 5/)]);
  });

  it("judges each fence (and each R2 object) on its own", () => {
    const history = [write(9, 0, 5, "accepted", "ns/claims/a#x"), write(1, 6, 8, "accepted", "ns/claims/a#y")];
    expect(checkFences(history)).toEqual([]);
  });
});
