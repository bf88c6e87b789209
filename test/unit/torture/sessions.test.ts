/**
 * The checkers on bound claims (docs/protocol.md#sessions): the epoch bounds the history
 * proves (lease-epochs.ts), mutual exclusion against them, a bound claim let go once its
 * epoch ended (bound-release.ts), and the linearizability search with lease views — each
 * with a clean history and a planted violation.
 */
import { describe, expect, it } from "vitest";
import { noticeAtMs } from "../../../src/core/generation-lease.ts";
import { DEFAULT_LEASE_CHANNEL_TTL_MS } from "../../../src/protocol/generations.ts";
import { RELEASE_BOUND_MS, checkBoundRelease } from "../../torture/check/bound-release.ts";
import { ALARM_LATENESS_MS, leaseEpochs } from "../../torture/check/lease-epochs.ts";
import { checkLinearizability } from "../../torture/check/linearizability.ts";
import { checkMutualExclusion } from "../../torture/check/mutual-exclusion.ts";
import type { ChannelEntry } from "../../torture/history.ts";
import { fault, ok, op, owned, record, refused, unknown } from "./histories.ts";

/** g's record with lease epoch `epoch` until `deadline` (0: none). */
const gen = (id: string, epoch: string, deadline: number) => ({
  generation: {
    id,
    service: "s",
    instanceId: "i",
    state: "joining",
    startedAtMs: 0,
    updatedAtMs: 0,
    reason: "registered",
    leaseEpoch: epoch,
    leaseExpiresAtMs: deadline,
  },
});
const keepalive = (g: string, at: number, ttlMs: number, epoch: string) =>
  op("keepaliveGeneration", g, { ttlMs }, at - 5, at + 5, ok(gen(g, epoch, at + ttlMs)));
const endLease = (g: string, at: number, epoch: string) =>
  op("endLeaseGeneration", g, { operationId: `e${at}` }, at - 5, at + 5, ok(gen(g, epoch, 0)));
/** A claim g holds bound to `epoch`, learned deadline `deadline`. */
const bound = (g: string, token: string, version: string, at: number, epoch: string, deadline: number) => ({
  ...owned(g, token, version, at, 0),
  expiresAtMs: deadline,
  bound: true,
  leaseEpoch: epoch,
});
const expiredAfter = (hold: ReturnType<typeof bound>, version: string) =>
  record({
    version,
    fencingToken: hold.fencingToken,
    previousOwner: hold.ownerGeneration,
    acquiredAtMs: hold.acquiredAtMs,
    lastHeartbeatMs: hold.lastHeartbeatMs,
    expiresAtMs: hold.expiresAtMs,
    reason: "expired",
  });
const acquireBound = (g: string, id: string) => ({ generationId: g, bound: true, operationId: id });
const acquireTtl = (g: string, id: string) => ({ generationId: g, ttlMs: 1000, operationId: id });
/** g2 acquires c at `at` (token 2, version 3: after the expiry of g1's hold at version 2). */
const takenByG2 = (at: number, id: string) =>
  op(
    "acquire",
    "c",
    acquireTtl("g2", id),
    at - 5,
    at + 5,
    ok({ claim: { ...owned("g2", "2", "3", at, 1000), previousOwner: "g1" } }),
  );

/** g1 keeps epoch 1 until 1000, binds c at 100; g2 takes c at `takenAt`; `extra` in between. */
function takeover(takenAt: number, extra: Parameters<typeof checkMutualExclusion>[0] = []) {
  const hold = bound("g1", "1", "1", 100, "1", 1000);
  return [
    keepalive("g1", 0, 1000, "1"),
    op("acquire", "c", acquireBound("g1", "a"), 95, 105, ok({ claim: hold })),
    ...extra,
    takenByG2(takenAt, "b"),
    op("get", "c", undefined, takenAt + 10, takenAt + 20, ok({ claim: owned("g2", "2", "3", takenAt, 1000) })),
    // The expiry in between, as a watcher heard it.
    {
      t: "watch" as const,
      watcher: "claim:c",
      conn: 1,
      atMs: takenAt,
      kind: "message" as const,
      msg: { type: "event", reason: "expired", claim: expiredAfter(hold, "2"), timeMs: takenAt },
    },
  ];
}

describe("lease epochs: what the history proves of an epoch's end", () => {
  it("live through the latest answered deadline, cut by a lease/end that may have ended it", () => {
    const history = [keepalive("g", 0, 1000, "1"), keepalive("g", 300, 1000, "1")];
    // Ended by the last keepalive's latest possible deadline (answered by 305, plus its ttl),
    // plus one eviction's fold, which the runtime may impose at any time: its first read is
    // at most the alarm (two ttls past the deadline, run late), and it serves that + the ttl.
    const endedByMs = noticeAtMs(1305 + 1000, 1000) + ALARM_LATENESS_MS + 1000;
    expect(leaseEpochs(history).bounds("g", 1n)).toEqual({
      liveThroughMs: 1300,
      endedByMs,
      seenOverMs: Infinity,
      // Nobody asked: the alarm notices the lapse two ttls later, run late.
      committedByMs: noticeAtMs(endedByMs, 1000) + ALARM_LATENESS_MS,
    });
    const ended = leaseEpochs([...history, endLease("g", 500, "1")]).bounds("g", 1n);
    expect(ended).toEqual({ liveThroughMs: 490, endedByMs: 505, seenOverMs: 505, committedByMs: 505 });
    // A keepalive asked after that end completed, still answering epoch 1: the end was not of epoch 1.
    const later = leaseEpochs([endLease("g", 500, "1"), keepalive("g", 600, 1000, "1")]).bounds("g", 1n);
    expect(later.liveThroughMs).toBe(1600);
  });

  it("a crash while the epoch is live: the fresh instance serves its first read + the ttl", () => {
    const history = [keepalive("g", 0, 1000, "1"), fault("crash", 500), fault("restart", 600)];
    // An eviction's fold before the crash reaches 1500 at most; back at 600, the server reads
    // the row by the alarm at the latest (two ttls past 1500), and serves that + the ttl.
    const endedByMs = noticeAtMs(1500, 1000) + ALARM_LATENESS_MS + 1000;
    // After a crash the alarm may know no ttl: it notices by the channel default's two ttls.
    const committedByMs = noticeAtMs(endedByMs, DEFAULT_LEASE_CHANNEL_TTL_MS) + ALARM_LATENESS_MS;
    expect(leaseEpochs(history).bounds("g", 1n)).toMatchObject({ liveThroughMs: 1000, endedByMs, committedByMs });
    // Back long after the deadline: the first read is the restart's, run late.
    const late = [keepalive("g", 0, 1000, "1"), fault("crash", 500), fault("restart", 20_000)];
    expect(leaseEpochs(late).bounds("g", 1n).endedByMs).toBe(20_000 + ALARM_LATENESS_MS + 1000);
  });

  it("an eviction extends once, and again only after a keepalive that extension did not cover", () => {
    const first = [keepalive("g", 0, 1000, "1")];
    const onceMs = noticeAtMs(1005 + 1000, 1000) + ALARM_LATENESS_MS + 1000;
    expect(leaseEpochs(first).bounds("g", 1n).endedByMs).toBe(onceMs);
    // A keepalive answered within that reach (after a fold revived the lease) is a new promise
    // (it reaches its completion, 5 ms after its deadline's instant, + the ttl).
    const again = [...first, keepalive("g", onceMs - 1000, 1000, "1")];
    expect(leaseEpochs(again).bounds("g", 1n).endedByMs).toBe(
      noticeAtMs(onceMs + 5 + 1000, 1000) + ALARM_LATENESS_MS + 1000,
    );
  });

  it("a channel opened without a ttl has the default one", () => {
    const open: ChannelEntry = { t: "channel", generation: "g", conn: 1, atMs: 0, kind: "open" };
    expect(leaseEpochs([open]).maxTtlMs("g")).toBe(DEFAULT_LEASE_CHANNEL_TTL_MS);
  });

  it("a counted pong extends the epoch; one that came after the deadline held does not", () => {
    const channel = (atMs: number, kind: ChannelEntry["kind"], msg?: unknown): ChannelEntry => ({
      t: "channel",
      generation: "g",
      conn: 7,
      atMs,
      kind,
      ...(kind === "open" ? { ttlMs: 1000 } : {}),
      ...(msg === undefined ? {} : { msg }),
    });
    const history = [
      channel(0, "open"),
      channel(10, "message", { type: "generation", ...gen("g", "1", 1005) }),
      channel(500, "ping"),
      channel(510, "message", { type: "pong" }),
      channel(1400, "ping"),
      channel(2600, "message", { type: "pong" }), // after the 1500 held: not counted
    ];
    expect(leaseEpochs(history).bounds("g", 1n).liveThroughMs).toBe(1500);
  });
});

describe("mutual exclusion of bound claims", () => {
  it("accepts a takeover after the owner's epoch was last answered live", () => {
    expect(checkMutualExclusion(takeover(1100)).violations).toEqual([]);
    // After a lease/end, at once — even before the deadline the claim learned.
    expect(checkMutualExclusion(takeover(520, [endLease("g1", 500, "1")])).violations).toEqual([]);
  });

  it("reports a takeover while the owner's epoch was certainly live (planted)", () => {
    const found = (history: Parameters<typeof checkMutualExclusion>[0]) =>
      new Set(checkMutualExclusion(history).violations.map((v) => v.message.replace(/ \((op|watch) .*\)$/, "")));
    expect(found(takeover(900))).toEqual(
      new Set([
        "c token 1: expired event at 900, not after g1's epoch 1, live through 1000",
        "c token 2 acquired by g2 at 900 while token 1 (g1) held it until g1's epoch 1, live through 1000",
      ]),
    );
    // A keepalive answered later in the same epoch moves the entitlement on.
    expect(found(takeover(1100, [keepalive("g1", 600, 1000, "1")]))).toEqual(
      new Set([
        "c token 1: expired event at 1100, not after g1's epoch 1, live through 1600",
        "c token 2 acquired by g2 at 1100 while token 1 (g1) held it until g1's epoch 1, live through 1600",
      ]),
    );
  });
});

describe("lease epochs end no earlier than their answered deadlines", () => {
  const epochOver = (history: Parameters<typeof checkMutualExclusion>[0]) =>
    checkMutualExclusion(history).violations.map((v) => v.message);

  it("accepts a new epoch after the deadline, or after a lease/end", () => {
    expect(epochOver([keepalive("g", 0, 1000, "1"), keepalive("g", 1100, 1000, "2")])).toEqual([]);
    const ended = [keepalive("g", 0, 1000, "1"), endLease("g", 300, "1"), keepalive("g", 400, 1000, "2")];
    expect(epochOver(ended)).toEqual([]);
  });

  it("reports an epoch answered over before a deadline it was answered, a restart's included (planted)", () => {
    const restarted = [keepalive("g", 0, 1000, "1"), fault("crash", 300), fault("restart", 400)];
    expect(epochOver([...restarted, keepalive("g", 500, 1000, "2")])).toEqual([
      "generation g: epoch 1 was answered over by 505, but live through 1000",
    ]);
    const noLease = op("getGeneration", "g", undefined, 600, 610, ok(gen("g", "1", 0)));
    expect(epochOver([...restarted, noLease])).toEqual([
      "generation g: epoch 1 was answered over by 610, but live through 1000",
    ]);
  });
});

describe("bound claims are let go once their epoch ended", () => {
  const hold = bound("g1", "1", "1", 100, "1", 1000);
  const base = [
    keepalive("g1", 0, 1000, "1"),
    op("acquire", "c", acquireBound("g1", "a"), 95, 105, ok({ claim: hold })),
  ];
  const read = (at: number) => op("get", "c", undefined, at, at + 5, ok({ claim: hold }));
  const contend = (at: number) =>
    op("acquire", "c", acquireTtl("g2", `x${at}`), at, at + 5, refused("claim_held", 409, { claim: hold }));

  const bounds = (history: Parameters<typeof checkBoundRelease>[0]) => leaseEpochs(history).bounds("g1", 1n);

  it("accepts a bound claim held until its epoch may have ended, and a little after", () => {
    expect(checkBoundRelease([...base, read(900), contend(950), read(5_000)]).violations).toEqual([]);
    // A crash keeps the epoch until the fresh instance's first read + the ttl.
    const crashed = [...base, fault("crash", 500), fault("restart", 700), contend(2_500), read(7_500)];
    expect(checkBoundRelease(crashed).violations).toEqual([]);
  });

  it("a lapse nobody asked about is noticed up to two ttls late: held that long is no violation", () => {
    const { endedByMs, committedByMs } = bounds(base);
    expect(committedByMs).toBe(noticeAtMs(endedByMs, 1000) + ALARM_LATENESS_MS);
    const withinMs = committedByMs + RELEASE_BOUND_MS;
    expect(checkBoundRelease([...base, read(endedByMs + 2 * 1000), read(withinMs)]).violations).toEqual([]);
    // Later than that it is (planted).
    const { violations } = checkBoundRelease([...base, read(withinMs + 100)]);
    expect(violations.map((v) => v.message)).toEqual([
      expect.stringMatching(
        new RegExp(
          `asked at ${withinMs + 100}; the epoch had ended by ${endedByMs}, its end committed by ${committedByMs}`,
        ),
      ),
    ]);
  });

  it("a GET that saw the lapse committed it: the claim hears the end within the release bound", () => {
    const seen = op("getGeneration", "g1", undefined, 1100, 1110, ok(gen("g1", "1", 0)));
    expect(bounds([...base, seen]).committedByMs).toBe(1110);
    expect(checkBoundRelease([...base, seen, read(1110 + RELEASE_BOUND_MS)]).violations).toEqual([]);
    const { violations } = checkBoundRelease([...base, seen, read(1110 + RELEASE_BOUND_MS + 100)]);
    expect(violations).toHaveLength(1);
  });

  it("a restart extends the epoch to the server's return + the ttl, no further (planted)", () => {
    const restarted = [...base, fault("crash", 500), fault("restart", 20_000)];
    const extendedMs = 20_000 + ALARM_LATENESS_MS + 1000;
    expect(bounds(restarted).endedByMs).toBe(extendedMs);
    expect(checkBoundRelease([...restarted, contend(extendedMs - 100)]).violations).toEqual([]);
    const { violations } = checkBoundRelease([...restarted, contend(extendedMs + 100)]);
    expect(violations.map((v) => v.message)).toEqual([
      expect.stringMatching(
        new RegExp(`asked at ${extendedMs + 100} refused claim_held .* which had ended by ${extendedMs}`),
      ),
    ]);
  });

  it("reports a contender refused after the epoch ended, and a claim never told (planted)", () => {
    const { endedByMs, committedByMs } = bounds(base);
    const lateRead = committedByMs + RELEASE_BOUND_MS + 100;
    const { violations } = checkBoundRelease([...base, contend(endedByMs + 100), read(lateRead)]);
    expect(violations.map((v) => v.message)).toEqual([
      expect.stringMatching(
        new RegExp(
          `acquire by g2 asked at ${endedByMs + 100} refused claim_held by token 1 bound to g1's epoch 1, which had ended by ${endedByMs}`,
        ),
      ),
      expect.stringMatching(
        new RegExp(`token 1 still bound to g1's epoch 1 .* asked at ${lateRead}; the epoch had ended by ${endedByMs}`),
      ),
    ]);
  });
});

describe("linearizability with lease views", () => {
  const messages = (history: Parameters<typeof checkLinearizability>[0]): string[] =>
    checkLinearizability(history).violations.map((v) => v.message);

  it("explains bound acquires, a renew answered unchanged, no_lease, and an expiry by lease/end", () => {
    const hold = bound("g1", "1", "1", 100, "1", 1000);
    const history = [
      keepalive("g1", 0, 1000, "1"),
      op("acquire", "c", acquireBound("g3", "n"), 40, 50, refused("no_lease")),
      op("acquire", "c", acquireBound("g1", "a"), 95, 105, ok({ claim: hold })),
      op("renew", "c", { generationId: "g1", token: "1", ttlMs: 500, operationId: "r" }, 200, 210, ok({ claim: hold })),
      op("acquire", "c", acquireTtl("g2", "b"), 300, 310, refused("claim_held", 409, { claim: hold })),
      endLease("g1", 500, "1"),
      takenByG2(605, "d"),
    ];
    expect(checkLinearizability(history)).toMatchObject({ violations: [], unchecked: 0 });
  });

  it("an unanswered bind leaves an epoch the next answer fixes", () => {
    const history = [
      keepalive("g1", 0, 1000, "1"),
      op("acquire", "c", acquireBound("g1", "a"), 95, 105, unknown),
      op("get", "c", undefined, 200, 210, ok({ claim: bound("g1", "1", "1", 100, "1", 1000) })),
    ];
    expect(messages(history)).toEqual([]);
  });

  it("reports a takeover while the owner's epoch was certainly live (planted)", () => {
    const hold = bound("g1", "1", "1", 100, "1", 1000);
    const history = [
      keepalive("g1", 0, 1000, "1"),
      op("acquire", "c", acquireBound("g1", "a"), 95, 105, ok({ claim: hold })),
      takenByG2(605, "d"),
    ];
    expect(messages(history)).toEqual([
      expect.stringMatching(/^c: version gap: nothing explains v2\.\.v2 and then v3/),
    ]);
  });

  it("reports no_lease for a generation whose lease was certainly live (planted)", () => {
    const history = [
      keepalive("g1", 0, 1000, "1"),
      op("acquire", "c", acquireBound("g1", "a"), 95, 105, refused("no_lease")),
    ];
    expect(messages(history)).toEqual([expect.stringMatching(/^c: no state explains a refusal: acquire#.*no_lease/)]);
  });
});
