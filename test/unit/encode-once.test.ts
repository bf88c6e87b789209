import { describe, expect, it } from "vitest";
import { encodeOnce } from "../../src/protocol/encode-once.ts";

describe("encoding a value once for every consumer", () => {
  it("renders an object on its first use and hands the same result to later ones", () => {
    let calls = 0;
    const render = encodeOnce((v: { n: number }) => {
      calls++;
      return { text: String(v.n) };
    });
    const value = { n: 7 };
    const first = render(value);
    expect(render(value)).toBe(first);
    expect(calls).toBe(1);
  });

  it("renders each object of its own, equal or not", () => {
    const render = encodeOnce((v: { n: number }) => ({ text: String(v.n) }));
    const a = render({ n: 1 });
    const b = render({ n: 1 });
    expect(b).toEqual(a);
    expect(b).not.toBe(a);
  });
});
