/**
 * One torture run: start the server (own port, own state directory, own process group),
 * run the clients, the watchers and the fault injector side by side for the duration,
 * stop everything and close the history.
 *
 * Guarantees:
 * - Every client and watcher choice and the fault schedule come from forks of one seeded
 *   generator, so a seed reproduces the schedule (not the interleaving).
 * - When it resolves, nothing it started is running, every operation is in the history and
 *   the server's state directory is removed.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "../e2e/server.ts";
import { runFaults, type FaultCounts } from "./faults.ts";
import { HistoryWriter } from "./history.ts";
import { Rng } from "./rng.ts";
import { ServerProcess, sleep } from "./server-process.ts";
import { watchClaimForever, watchScopeForever } from "./watchers.ts";
import { Knowledge, keySpace, runClient } from "./workload.ts";

export interface RunOptions {
  durationS: number;
  clients: number;
  seed: number;
  historyPath: string;
  /** Mean interval between faults (ms). */
  faultEveryMs: number;
  /** Share of faults that are crashes (the rest are pauses). */
  crashShare: number;
  /** Client-side timeout of one call (ms). */
  timeoutMs: number;
  log: (line: string) => void;
  /** Ends the run early (as if the duration had passed); everything is still cleaned up. */
  signal?: AbortSignal;
}

export interface RunFigures extends FaultCounts {
  /** Operations that reached the server or may have (refused connections excluded). */
  ops: number;
  refused: number;
  ambiguous: number;
}

export async function runTorture(options: RunOptions): Promise<RunFigures> {
  const root = new Rng(options.seed);
  const faultRng = root.fork();
  const stateDir = mkdtempSync(join(tmpdir(), "shiftlock-torture-state-"));
  const server = new ServerProcess(await freePort(), stateDir);
  const history = new HistoryWriter(options.historyPath);
  const namespace = "torture";
  const keys = keySpace(namespace, options.clients);
  history.write({
    t: "meta",
    seed: options.seed,
    clients: options.clients,
    durationS: options.durationS,
    namespace,
    startedAtMs: Date.now(),
  });
  options.log(`server ${server.url}, state ${stateDir}, history ${options.historyPath}`);
  await server.start();

  const figures: RunFigures = { ops: 0, refused: 0, ambiguous: 0, crashes: 0, pauses: 0 };
  const endAt = Date.now() + options.durationS * 1_000;
  const stopped = (): boolean => Date.now() >= endAt || options.signal?.aborted === true;
  const knowledge = new Knowledge();
  const baseUrl = (): string => server.url;
  try {
    const faults = runFaults({
      server,
      history,
      rng: faultRng,
      meanIntervalMs: options.faultEveryMs,
      crashShare: options.crashShare,
      stopped,
      log: options.log,
    });
    const watchers = [
      ...keys.claims.map((claim) =>
        watchClaimForever({ namespace, baseUrl, history, rng: root.fork(), stopped }, claim),
      ),
      ...keys.scopes.map((scope) =>
        watchScopeForever({ namespace, baseUrl, history, rng: root.fork(), stopped }, scope),
      ),
    ];
    const clients = Array.from({ length: options.clients }, (_, id) =>
      runClient({
        id,
        rng: root.fork(),
        baseUrl,
        history,
        keys,
        knowledge,
        timeoutMs: options.timeoutMs,
        stopped,
        onOp: (outcome) => {
          if (outcome.type === "error" && outcome.code === "unavailable") figures.refused++;
          else figures.ops++;
          if (outcome.type === "unknown") figures.ambiguous++;
        },
      }),
    );
    const progress = setInterval(() => options.log(`ops ${figures.ops}, refused ${figures.refused}`), 10_000);
    const counts = await faults;
    Object.assign(figures, counts);
    await Promise.all(clients);
    await Promise.all(watchers);
    clearInterval(progress);
    await sleep(0);
  } finally {
    await server.stop();
    await history.close();
    // The history, not the state, is what reproduces a verdict (--check).
    rmSync(stateDir, { recursive: true, force: true });
  }
  return figures;
}
