import { describe, expect, it } from "vitest";
import { checkIdempotency } from "../../torture/check/idempotency.ts";
import { ok, op, owned, unknown } from "./histories.ts";

const body = { generationId: "g1", ttlMs: 1000, operationId: "o1" };

describe("idempotency checker", () => {
  it("accepts a retry answered with the first answer", () => {
    const first = op("acquire", "c", body, 0, 10, ok({ claim: owned("g1", "1", "1", 5, 1000) }));
    const history = [
      first,
      op("acquire", "c", body, 20, 30, unknown, { retryOf: first.id }),
      op("acquire", "c", body, 40, 50, ok({ claim: owned("g1", "1", "1", 5, 1000) }), { retryOf: first.id }),
    ];
    expect(checkIdempotency(history)).toEqual([]);
  });

  it("reports a retry that advanced the token again", () => {
    const first = op("acquire", "c", body, 0, 10, ok({ claim: owned("g1", "1", "1", 5, 1000) }));
    const history = [
      first,
      op("acquire", "c", body, 40, 50, ok({ claim: owned("g1", "2", "3", 45, 1000) }), { retryOf: first.id }),
    ];
    expect(checkIdempotency(history).map((v) => v.message)).toEqual([
      expect.stringMatching(/\(token 1\).*\(token 2\)/),
    ]);
  });
});
