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
 * object before the clients go on.
 *
 * Guarantees: the schedule (intervals, crash or pause, pause lengths) is a function of the
 * seed; which crashes are lapse crashes, their mode and their ttls come from a generator of
 * their own (so the schedule of a seed is the same with them or without); the server is
 * running and not paused, and the clients' gate open, when `run` resolves.
 */
import type { HeldForCrash } from "./crash-setup.ts";
import type { HistoryWriter } from "./history.ts";
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
}

export interface FaultCounts {
  crashes: number;
  pauses: number;
  /** Crashes that were lapse crashes (included in `crashes`). */
  lapses: number;
}

/** Inject faults until `stopped()`. */
export async function runFaults(options: FaultOptions): Promise<FaultCounts> {
  const { server, history, rng } = options;
  const counts: FaultCounts = { crashes: 0, pauses: 0, lapses: 0 };
  for (;;) {
    const intervalMs = rng.int(Math.round(options.meanIntervalMs / 2), Math.round((options.meanIntervalMs * 3) / 2));
    const crash = rng.chance(options.crashShare);
    const pauseMs = rng.int(2_000, 3_500);
    const until = Date.now() + intervalMs;
    while (Date.now() < until && !options.stopped()) await sleep(50);
    if (options.stopped()) return counts;
    const lapse = options.lapse;
    if (crash && lapse !== undefined && lapse.rng.chance(lapse.share)) {
      await lapseCrash(options, lapse, counts);
    } else if (crash) {
      history.write({ t: "fault", kind: "crash", atMs: Date.now() });
      await server.crash();
      counts.crashes++;
      await server.start();
      history.write({ t: "fault", kind: "restart", atMs: Date.now() });
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
    await lapse.judge({ label, quietAtMs: restartAtMs, leasesFreeAtMs: lastDeadlineMs + LAPSE_SLACK_MS });
  } finally {
    lapse.resume();
  }
}

async function sleepUntil(atMs: number): Promise<void> {
  const ms = atMs - Date.now();
  if (ms > 0) await sleep(ms);
}
