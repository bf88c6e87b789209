// The WAN relay's delay logic (bench/wan-relay.mjs) with an injected clock: every chunk
// leaves no earlier than its delay, in arrival order, jitter included. No timing here: the
// relay's produced RTT is checked by each bench run itself.
import { describe, expect, it } from "vitest";
import { DelayLine } from "../../bench/wan-relay.mjs";

describe("DelayLine", () => {
  it("holds each chunk for the one-way delay, then releases it", () => {
    const line = new DelayLine<string>({ oneWayMs: 25 });
    expect(line.push("a", 1000)).toBe(1025);
    expect(line.take(1024)).toEqual([]);
    expect(line.nextAtMs()).toBe(1025);
    expect(line.take(1025)).toEqual(["a"]);
    expect(line.size).toBe(0);
    expect(line.nextAtMs()).toBeUndefined();
  });

  it("releases everything due at once, in arrival order", () => {
    const line = new DelayLine<number>({ oneWayMs: 10 });
    line.push(1, 0);
    line.push(2, 3);
    line.push(3, 7);
    expect(line.take(13)).toEqual([1, 2]);
    expect(line.take(100)).toEqual([3]);
  });

  it("never lets jitter reorder a connection's bytes", () => {
    // First chunk draws +5 ms, the second −5 ms: the second waits for the first.
    const draws = [1, 0];
    const line = new DelayLine<string>({ oneWayMs: 20, jitterMs: 5, random: () => draws.shift() ?? 0.5 });
    expect(line.push("first", 0)).toBe(25);
    expect(line.push("second", 1)).toBe(25);
    expect(line.take(24)).toEqual([]);
    expect(line.take(25)).toEqual(["first", "second"]);
  });

  it("spreads delays over oneWay ± jitter and never below zero", () => {
    const line = new DelayLine<number>({ oneWayMs: 2, jitterMs: 5, random: () => 0 });
    expect(line.push(1, 100)).toBe(100);
    const wide = new DelayLine<number>({ oneWayMs: 30, jitterMs: 10, random: () => 0.75 });
    expect(wide.push(1, 0)).toBe(35);
  });

  it("refuses a negative delay", () => {
    expect(() => new DelayLine({ oneWayMs: -1 })).toThrow(RangeError);
    expect(() => new DelayLine({ oneWayMs: 1, jitterMs: -1 })).toThrow(RangeError);
  });
});
