/**
 * WatchQueue: the push → pull bridge under every watch (HTTP and memory).
 */
import { describe, expect, it } from "vitest";
import { WatchQueue } from "../../src/client/transport/watch-queue.ts";

describe("WatchQueue", () => {
  it("hands items out in push order, to buffered and to pending next() calls alike", async () => {
    const q = new WatchQueue<number>();
    const a = q.next();
    const b = q.next();
    q.push(1);
    q.push(2);
    q.push(3);
    expect([(await a).value, (await b).value, (await q.next()).value]).toEqual([1, 2, 3]);
  });

  it("delivers buffered items before the failure, throws it once, then reports done", async () => {
    const q = new WatchQueue<number>();
    q.push(1);
    const boom = new Error("boom");
    q.fail(boom);
    q.push(2); // ignored after the end
    expect((await q.next()).value).toBe(1);
    await expect(q.next()).rejects.toBe(boom);
    expect((await q.next()).done).toBe(true);
  });

  it("reports consumption (onTake), drains, and runs the close hook exactly once", async () => {
    const taken: number[] = [];
    let closed = 0;
    const q = new WatchQueue<number>(
      () => closed++,
      (n) => taken.push(n),
    );
    q.push(1);
    q.push(2);
    let drained = false;
    void q.drained().then(() => (drained = true));
    await q.next();
    await Promise.resolve();
    expect(drained).toBe(false);
    await q.next();
    await Promise.resolve();
    expect(drained).toBe(true);
    expect(taken).toEqual([1, 2]);
    q.push(3);
    for await (const n of q) {
      expect(n).toBe(3);
      break; // a consumer leaving runs the hook …
    }
    q.close(); // … and only once
    expect(closed).toBe(1);
    expect((await q.next()).done).toBe(true);
  });
});
