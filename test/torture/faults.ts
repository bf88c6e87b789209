/**
 * The fault injector: every few seconds (drawn from the seed) either crashes the server
 * (SIGKILL to its process group, then a restart on the same state) or pauses it (SIGSTOP,
 * then SIGCONT after 2–3.5 s: longer than any claim ttl, so leases expire meanwhile and
 * in-flight calls time out). Every fault is recorded.
 *
 * Guarantees: the schedule (intervals, crash or pause, pause lengths) is a function of the
 * seed; the server is running and not paused when `run` resolves.
 */
import type { HistoryWriter } from "./history.ts";
import type { Rng } from "./rng.ts";
import { sleep, type ServerProcess } from "./server-process.ts";

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
}

export interface FaultCounts {
  crashes: number;
  pauses: number;
}

/** Inject faults until `stopped()`. */
export async function runFaults(options: FaultOptions): Promise<FaultCounts> {
  const { server, history, rng } = options;
  const counts: FaultCounts = { crashes: 0, pauses: 0 };
  for (;;) {
    const intervalMs = rng.int(Math.round(options.meanIntervalMs / 2), Math.round((options.meanIntervalMs * 3) / 2));
    const crash = rng.chance(options.crashShare);
    const pauseMs = rng.int(2_000, 3_500);
    const until = Date.now() + intervalMs;
    while (Date.now() < until && !options.stopped()) await sleep(50);
    if (options.stopped()) return counts;
    if (crash) {
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
