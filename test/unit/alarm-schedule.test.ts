import { describe, expect, it } from "vitest";
import { AlarmSchedule } from "../../src/durable/alarm-schedule.ts";

/** Just the alarm half of a Durable Object's storage, recording each write. */
function fakeStorage(armedAtMs: number | null = null) {
  const writes: number[] = [];
  const storage = {
    getAlarm: () => Promise.resolve(armedAtMs),
    setAlarm: (atMs: number) => {
      writes.push(atMs);
      return Promise.resolve();
    },
  };
  return { storage: storage as unknown as DurableObjectStorage, writes };
}

describe("AlarmSchedule", () => {
  it("writes the alarm only to move it earlier, and reports each write it makes", async () => {
    const { storage, writes } = fakeStorage(5_000);
    let reported = 0;
    const schedule = new AlarmSchedule(storage, () => reported++);
    await schedule.load();
    await schedule.ensure(9_000); // later than the armed alarm: nothing written
    await schedule.ensure(undefined); // nothing due
    await schedule.ensure(4_000); // earlier: one write
    await schedule.ensure(4_000); // the same: nothing
    expect(writes).toEqual([4_000]);
    expect(reported).toBe(1);
  });

  it("after the alarm fired, the next deadline is written whatever it is", async () => {
    const { storage, writes } = fakeStorage();
    let reported = 0;
    const schedule = new AlarmSchedule(storage, () => reported++);
    await schedule.load();
    await schedule.ensure(1_000);
    schedule.fired();
    await schedule.ensure(60_000);
    expect(writes).toEqual([1_000, 60_000]);
    expect(reported).toBe(2);
  });
});
