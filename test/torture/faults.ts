/**
 * The fault injector: every few seconds (drawn from the seed) either crashes the server
 * (SIGKILL to its process group, then a restart on the same state) or pauses it (SIGSTOP,
 * then SIGCONT after 2–3.5 s: longer than any claim ttl, so leases expire meanwhile and
 * in-flight calls time out). Every fault is recorded.
 *
 * A share of the crashes are *lapse crashes*, timed against deadlines, each ending in a
 * listing judgement: the clients are stopped (quiet.ts) until everything they held lapsed,
 * one more client takes every claim (half of them mid-transfer) and every scope with a queued
 * waiter (crash-setup.ts), and the server is killed while all of it is held (at once, or
 * after up to 1.5 s, so the listing has heard of it or not). Then either
 * - `lapsed`: the restart waits until every deadline set has passed: they all fall due while
 *   the server is down; or
 * - `edge`: the ttl is the longest start so far plus the kill's delay, −0.5 to +1.5 s: the
 *   deadlines fall due just before or just after the server is back (starts vary by
 *   seconds on a loaded machine; the crash's log line says where they fell);
 * and once it serves, the listing judge (listing-probe.ts) compares the listing with every
 * object before the clients go on. With sessions, some claims are bound to a session lease
 * instead (crash-setup.ts), ended just before the kill half of the time: the judge then
 * reads on until the end must have reached them ({@link RELEASE_BOUND_MS} after the
 * restart, or after the lease's latest end), with nobody contending.
 *
 * A share of the other crashes are *session crashes*, timed on a session's lease
 * (sessions.ts), so that the generation object dies between ending an epoch and delivering
 * the end to the claims it bound:
 * - `ended`: a live session lease is ended (`lease/end`, one with a transfer prepared from it
 *   if there is), and the server killed 0–30 ms after the answer — the deliveries start after
 *   the commit, so they are in flight or not yet sent;
 * - `expiring`: a live session lease is no longer kept, and the server killed at its
 *   deadline, −30 to +60 ms: just before it expires, or while its alarm ends it and delivers.
 * The restart is immediate; the clients go on meanwhile (no quiet point).
 *
 * Guarantees: the schedule (intervals, crash or pause, pause lengths) is a function of the
 * seed; which crashes are lapse crashes, their mode and their ttls come from a generator of
 * their own, and which are session crashes and their timing from another, drawn only for
 * crashes that are not lapse crashes (so the schedule of a seed, its lapse crashes
 * included, is the same with session crashes or without); the server is running and not
 * paused, and the clients' gate open, when `run` resolves.
 */
import { noticeAtMs } from "../../src/core/generation-lease.ts";
import { RELEASE_BOUND_MS } from "./check/bound-release.ts";
import type { HeldForCrash } from "./crash-setup.ts";
import type { FaultEntry, HistoryWriter } from "./history.ts";
import type { QuietPoint } from "./listing-probe.ts";
import type { Rng } from "./rng.ts";
import { sleep, type ServerProcess } from "./server-process.ts";
import { LONGEST_DEADLINE_MS, LEASE_TTL_MS } from "./workload.ts";

/** A lapse crash's claim and lease ttl in mode `lapsed` (ms). */
const LAPSED_TTL_MS = { min: 500, max: 2_000 } as const;
/** Longest delay between taking everything and the kill (ms); the listing needs ≈ 1.1 s to hear of it. */
const KILL_DELAY_MAX_MS = 1_500;
/**
 * After the last deadline a quiet point knows of, until the scopes' lease fields are judged:
 * the tick that applies an expiry runs 1 ms after the deadline, and a call that timed out
 * during a pause may reach the server a little after the clients stopped.
 */
export const LAPSE_SLACK_MS = 1_000;

/** What a lapse crash does besides the kill (runner.ts supplies it). */
export interface LapseOptions {
  /** Lapse decisions, modes and ttls: a generator apart from the fault schedule's. */
  rng: Rng;
  /** Share of crashes that are lapse crashes. */
  share: number;
  /** Stop the clients; resolves with the quiet point (quiet.ts `Gate.close`). */
  quiesce: () => Promise<number>;
  /** Take every claim and scope for `ttlMs` (crash-setup.ts). */
  hold: (ttlMs: number) => Promise<HeldForCrash>;
  /** Judge the listing (listing-probe.ts) and record it. */
  judge: (point: QuietPoint) => Promise<void>;
  /** Let the clients go on. */
  resume: () => void;
}

/** What a session crash does besides the kill (runner.ts supplies it, from sessions.ts). */
export interface SessionCrashOptions {
  /** Session-crash decisions and timings: a generator apart from the others. */
  rng: Rng;
  /** Share of the crashes that are not lapse crashes that are session crashes. */
  share: number;
  /** End a live session lease; false when none was live (then the crash is a plain one). */
  end: () => Promise<boolean>;
  /** Stop keeping a live session lease; its deadline, or undefined when none is live. */
  hold: () => number | undefined;
  /** Let the sessions keep their leases again. */
  release: () => void;
}

export interface FaultOptions {
  server: ServerProcess;
  history: HistoryWriter;
  rng: Rng;
  /** Mean interval between faults (ms); each interval is drawn from 0.5–1.5 × this. */
  meanIntervalMs: number;
  /** Probability that a fault is a crash rather than a pause. */
  crashShare: number;
  stopped: () => boolean;
  log: (line: string) => void;
  /** Lapse crashes; without it every crash restarts at once. */
  lapse?: LapseOptions;
  /** Session crashes (without it, none). */
  session?: SessionCrashOptions;
}

export interface FaultCounts {
  crashes: number;
  pauses: number;
  /** Crashes that were lapse crashes (included in `crashes`). */
  lapses: number;
  /** Crashes that were session crashes (included in `crashes`). */
  sessionCrashes: number;
}

/** Inject faults until `stopped()`. */
export async function runFaults(options: FaultOptions): Promise<FaultCounts> {
  const { server, history, rng } = options;
  const counts: FaultCounts = { crashes: 0, pauses: 0, lapses: 0, sessionCrashes: 0 };
  for (;;) {
    const intervalMs = rng.int(Math.round(options.meanIntervalMs / 2), Math.round((options.meanIntervalMs * 3) / 2));
    const crash = rng.chance(options.crashShare);
    const pauseMs = rng.int(2_000, 3_500);
    const until = Date.now() + intervalMs;
    while (Date.now() < until && !options.stopped()) await sleep(50);
    if (options.stopped()) return counts;
    const lapse = options.lapse;
    const session = options.session;
    if (crash && lapse !== undefined && lapse.rng.chance(lapse.share)) {
      await lapseCrash(options, lapse, counts);
    } else if (crash && session !== undefined && session.rng.chance(session.share)) {
      await sessionCrash(options, session, counts);
    } else if (crash) {
      await crashAndRestart(options, counts);
      options.log(`crash ${counts.crashes}: restarted`);
    } else {
      history.write({ t: "fault", kind: "pause", atMs: Date.now() });
      server.pause();
      counts.pauses++;
      await sleep(pauseMs);
      server.resume();
      history.write({ t: "fault", kind: "resume", atMs: Date.now() });
      options.log(`pause ${counts.pauses}: ${pauseMs} ms`);
    }
  }
}

/** One lapse crash (see the module comment), its listing judgement included. */
async function lapseCrash(options: FaultOptions, lapse: LapseOptions, counts: FaultCounts): Promise<void> {
  const { server, history } = options;
  const rng = lapse.rng;
  const mode = rng.chance(0.5) ? "lapsed" : "edge";
  const killDelayMs = rng.int(0, KILL_DELAY_MAX_MS);
  const ttlMs =
    mode === "lapsed"
      ? rng.int(Math.max(LAPSED_TTL_MS.min, killDelayMs + 200), Math.max(LAPSED_TTL_MS.max, killDelayMs + 200))
      : Math.max(killDelayMs + 200, killDelayMs + server.longestStartMs + rng.int(-500, 1_500));
  const quietAtMs = await lapse.quiesce();
  try {
    // Everything the clients held lapses first, so that every object is free to take.
    await sleepUntil(quietAtMs + LONGEST_DEADLINE_MS + 1);
    const held = await lapse.hold(ttlMs);
    await sleep(killDelayMs);
    const endBound = held.bound?.endBeforeKill === true ? held.endBound : undefined;
    if (endBound !== undefined) await endBound();
    const killAtMs = Date.now();
    history.write({ t: "fault", kind: "crash", atMs: killAtMs, lapse: mode });
    await server.crash();
    counts.crashes++;
    counts.lapses++;
    if (mode === "lapsed") await sleepUntil(held.lastDeadlineMs + 1);
    await server.start();
    const restartAtMs = Date.now();
    history.write({ t: "fault", kind: "restart", atMs: restartAtMs });
    await Promise.all(held.waits);
    // A waiter granted before the kill held its lease for the shortest ttl from then.
    const lastDeadlineMs = Math.max(held.lastDeadlineMs, killAtMs + LEASE_TTL_MS.min);
    const label = `lapse ${counts.lapses} (${mode})`;
    options.log(
      `crash ${counts.crashes}: ${label}, ttl ${ttlMs} ms, restarted ${restartAtMs - held.lastDeadlineMs} ms after the last deadline`,
    );
    // Claims bound to a session lease hear its end after the restart: from storage, at once if
    // it was ended before the kill; else the first read after the restart (at the latest the
    // alarm that notices the lapse) keeps the lease a ttl more (docs/generations.md "The lease
    // after a restart"), and the alarm notices that end up to two ttls later.
    const bound = held.bound;
    const boundEndedByMs =
      bound === undefined
        ? 0
        : endBound !== undefined
          ? restartAtMs
          : noticeAtMs(Math.max(restartAtMs, noticeAtMs(bound.deadlineMs, bound.ttlMs)) + bound.ttlMs, bound.ttlMs);
    const boundFreeAtMs = bound === undefined ? 0 : boundEndedByMs + RELEASE_BOUND_MS + LAPSE_SLACK_MS;
    await lapse.judge({
      label,
      quietAtMs: restartAtMs,
      leasesFreeAtMs: Math.max(lastDeadlineMs + LAPSE_SLACK_MS, boundFreeAtMs),
    });
  } finally {
    lapse.resume();
  }
}

/** Kill the server and start it again on the same state, both recorded. */
async function crashAndRestart(
  options: FaultOptions,
  counts: FaultCounts,
  kind: Partial<Pick<FaultEntry, "lapse" | "session">> = {},
): Promise<void> {
  options.history.write({ t: "fault", kind: "crash", atMs: Date.now(), ...kind });
  await options.server.crash();
  counts.crashes++;
  await options.server.start();
  options.history.write({ t: "fault", kind: "restart", atMs: Date.now() });
}

/** One session crash (see the module comment); a plain crash when no session lease is live. */
async function sessionCrash(options: FaultOptions, session: SessionCrashOptions, counts: FaultCounts): Promise<void> {
  const rng = session.rng;
  const mode = rng.chance(0.5) ? "ended" : "expiring";
  const killDelayMs = mode === "ended" ? rng.int(0, 30) : rng.int(-30, 60);
  let timed = false;
  try {
    if (mode === "ended") {
      timed = await session.end();
      if (timed) await sleep(killDelayMs);
    } else {
      const deadlineMs = session.hold();
      timed = deadlineMs !== undefined;
      if (deadlineMs !== undefined) await sleepUntil(deadlineMs + killDelayMs);
    }
    await crashAndRestart(options, counts, timed ? { session: mode } : {});
  } finally {
    session.release();
  }
  if (timed) counts.sessionCrashes++;
  const what = timed
    ? `session (${mode}, kill ${killDelayMs} ms ${mode === "ended" ? "after the answer" : "from the deadline"})`
    : "no live session lease";
  options.log(`crash ${counts.crashes}: ${what}, restarted`);
}

async function sleepUntil(atMs: number): Promise<void> {
  const ms = atMs - Date.now();
  if (ms > 0) await sleep(ms);
}
