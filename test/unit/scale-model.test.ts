// The scale model's arithmetic (bench/scale-model.mjs): counts by phase from meter lines,
// busy time as a union of intervals, and the projection rules docs/scale.md states.
import { describe, expect, it } from "vitest";
import {
  countByPhase,
  kindOf,
  monthlyUsd,
  parseMeterLine,
  projectPhase,
  projectSessions,
  summarize,
  unionMs,
  WS_MESSAGE_BILLING,
} from "../../bench/scale-model.mjs";

const line = (obj: string, op: string, startMs: number, durMs = 1, extra: object = {}) => ({
  obj,
  op,
  startMs,
  durMs,
  rowsRead: 1,
  rowsWritten: 2,
  frames: 0,
  deliveries: 0,
  ...extra,
});

describe("scale model", () => {
  it("parses meter lines out of the server's output and names object kinds", () => {
    const printed = `[wrangler] {"meter":1,"obj":"[\\"ns\\",\\"claim\\",\\"a\\"]","op":"command","startMs":5,"durMs":2,"rowsRead":3,"rowsWritten":1,"frames":0,"deliveries":0}`;
    const m = parseMeterLine(printed);
    expect(m).toMatchObject({ op: "command", rowsRead: 3 });
    expect(kindOf(m!.obj)).toBe("claim");
    expect(parseMeterLine('{"level":"info"}')).toBeUndefined();
  });

  it("counts per object and phase; busy time is the union of overlapping calls", () => {
    expect(
      unionMs([
        [0, 10],
        [5, 15],
        [20, 25],
      ]),
    ).toBe(20);
    const a = JSON.stringify(["ns", "claim", "a"]);
    const shard = JSON.stringify(["ns", "index-shard", "0"]);
    const counts = countByPhase(
      [
        line(a, "command", 0, 10),
        line(a, "command", 5, 10, { alarmsSet: 1 }),
        line(a, "alarm", 20, 1, { alarmsSet: 1 }),
        line(shard, "apply", 1),
        line(a, "command", 100),
      ],
      [
        { name: "steady", startMs: 0, endMs: 50 },
        { name: "idle", startMs: 50, endMs: 200 },
      ],
    );
    const steady = counts.get("steady")!;
    expect(steady.get(a)).toMatchObject({
      requests: 2,
      alarms: 1,
      alarmsSet: 2,
      rowsRead: 3,
      rowsWritten: 6,
      busyMs: 16,
    });
    const s = summarize(steady, 1);
    expect(s.busiest).toMatchObject({ obj: a, kind: "claim", reqPerS: 3 });
    expect(s.byKind["index-shard"]).toMatchObject({ objects: 1, requests: 1 });
    expect(counts.get("idle")!.get(a)).toMatchObject({ requests: 1, alarms: 0 });
  });

  it("projects own objects by their own rate and shared ones by the total rate over the shards", () => {
    const a = JSON.stringify(["ns", "claim", "a"]);
    const shard = JSON.stringify(["ns", "index-shard", "0"]);
    const index = JSON.stringify(["ns", "index"]);
    const lines = [
      ...Array.from({ length: 10 }, (_, i) => line(a, "command", i)),
      ...Array.from({ length: 40 }, (_, i) => line(shard, "apply", i)),
      ...Array.from({ length: 4 }, (_, i) => line(index, "applyBatch", i)),
    ];
    const measured = summarize(countByPhase(lines, [{ name: "p", startMs: 0, endMs: 100 }]).get("p")!, 10);
    const p = projectPhase(measured, {
      seconds: 10,
      opsPerS: 4,
      opsPerSProjected: 400,
      perObjectFactor: 2,
      shardsMeasured: 1,
      shardsProjected: 32,
      forwardWindowS: 0.5,
    });
    // claim: 1 req/s × 2; shards: 4 req/s × 100 ÷ 32; index: 0.4 × 100 = 40, under its cap of 32 / 0.5 + 0.4.
    expect(p.shardReqPerS).toBeCloseTo(12.5);
    expect(p.indexReqPerS).toBeCloseTo(40);
    expect(p.busiestKind).toBe("index");
    expect(p.busiestReqPerS).toBeCloseTo(40);
  });

  it("prices a steady state per month at the list prices", () => {
    // One million Worker requests and one million rows written a month cost $0.30 + $1.00.
    const perS = 1e6 / (30 * 24 * 3600);
    const usd = monthlyUsd({
      workerRequests: perS,
      objectRequests: 0,
      busyObjectS: 0,
      rowsRead: 0,
      rowsWritten: perS,
      storageGb: 0,
    });
    expect(usd).toBeCloseTo(1.3);
  });
});

describe("scale model: sessions", () => {
  const gen = (i: number) => JSON.stringify(["ns", "generation", `g${i}`]);

  it("counts an object's own listing delivery as its rows and time, not as a request to it", () => {
    const counts = countByPhase(
      [line(gen(0), "alarm", 0), line(gen(0), "delivery", 1, 1, { deliveries: 1 })],
      [{ name: "p", startMs: 0, endMs: 10 }],
    );
    expect(counts.get("p")!.get(gen(0))).toMatchObject({ requests: 0, alarms: 1, deliveries: 1, rowsWritten: 4 });
  });

  it("projects a steady state of bound claims by the generation count, alarm writes billed as rows", () => {
    // Two generations over 10 s: each fired one alarm (one alarm write) and wrote one row; 6 pings, 2 HTTP requests.
    const lines = [0, 1].flatMap((i) => [line(gen(i), "alarm", i, 1, { rowsWritten: 1, alarmsSet: 1 })]);
    const measured = summarize(countByPhase(lines, [{ name: "p", startMs: 0, endMs: 100 }]).get("p")!, 10);
    const p = {
      seconds: 10,
      generations: 2,
      claims: 200,
      workerRequests: 2,
      wsMessagesIn: 6,
      targetGenerations: 1000,
      targetClaims: 100_000,
    };
    const free = projectSessions(measured, { ...p, wsBilledPerMessage: WS_MESSAGE_BILLING.free });
    // ×500 generations: 2 alarms / 10 s → 100 alarms/s, 100 rows/s + 100 alarm writes/s, 100 Worker requests/s.
    expect(free).toMatchObject({
      objectRequestsPerS: 100,
      rowsWrittenPerS: 100,
      alarmWritesPerS: 100,
      wsBilledPerS: 0,
    });
    expect(free.workerRequestsPerS).toBeCloseTo(100);
    expect(free.requestsPerS).toBeCloseTo(200);
    expect(free.claimObjectRequestsPerS).toBe(0);
    // A generation fired 0.1 alarms/s: its own rate, whatever the count.
    expect(free).toMatchObject({ busiestKind: "generation", busiestReqPerS: 0.1 });
    const billed = projectSessions(measured, { ...p, wsBilledPerMessage: WS_MESSAGE_BILLING.twentyToOne });
    // 6 pings / 10 s × 500 = 300 messages/s, billed as 15 requests/s.
    expect(billed.wsBilledPerS).toBeCloseTo(15);
    const usd = (x: number) => x * 30 * 24 * 3600 * 1e-6;
    // Worker $0.30/M, objects $0.15/M, rows $1/M, 2 ms busy per alarm at 128 MB, 400 MB stored.
    const expected =
      usd(100) * 0.3 + usd(100) * 0.15 + usd(200) * 1 + usd(100) * 0.001 * 1 + usd(0.1) * 0.128 * 12.5 + 0.4096 * 0.2;
    expect(free.usdPerMonth).toBeCloseTo(expected, 0);
    expect(billed.usdPerMonth - free.usdPerMonth).toBeCloseTo(usd(15) * 0.15, 1);
  });
});
