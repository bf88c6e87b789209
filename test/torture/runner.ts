/**
 * One torture run: start the server (own port, own state directory, own process group),
 * run the clients, the watchers and the fault injector side by side for the duration,
 * judge the listing once the clients stopped (and at every lapse crash: faults.ts), stop
 * everything and close the history.
 *
 * Guarantees:
 * - Every client and watcher choice and the fault schedule come from forks of one seeded
 *   generator, so a seed reproduces the schedule (not the interleaving). The lapse crashes'
 *   generator is forked after all of them, so it moves none of theirs; the sessions' and
 *   the session crashes' (sessions.ts) after that, so they move none either.
 * - Every listing judgement is a history entry (check/listing.ts judges it again).
 * - With `plant: "listing-off"` every restart serves with `--listing-index off`: the listing
 *   hears of nothing after the first crash — the planted fault the listing check must catch.
 * - When it resolves, nothing it started is running, every operation is in the history and
 *   the server's state directory is removed.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { RELEASE_BOUND_MS } from "./check/bound-release.ts";
import { listingVerdict } from "./check/listing.ts";
import { holdEverything } from "./crash-setup.ts";
import { LAPSE_SLACK_MS, runFaults, type FaultCounts } from "./faults.ts";
import { HistoryWriter } from "./history.ts";
import { judgeListing, type QuietPoint } from "./listing-probe.ts";
import { Gate } from "./quiet.ts";
import { Rng } from "./rng.ts";
import { ServerProcess, sleep } from "./server-process.ts";
import { SessionBoard, endForCrash, holdForCrash, releaseHeld, runSession } from "./sessions.ts";
import { watchClaimForever, watchScopeForever } from "./watchers.ts";
import { Knowledge, LONGEST_DEADLINE_MS, keySpace, runClient, type ClientContext } from "./workload.ts";

/** Planted faults a run can carry (they must make it fail). */
export const PLANTS = ["listing-off"] as const;
export type Plant = (typeof PLANTS)[number];

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
  /** Share of crashes that are lapse crashes (faults.ts). */
  lapseShare: number;
  /** Session clients (sessions.ts), each leasing one generation of the key space; 0: none. */
  sessions: number;
  /** Share of the other crashes that are session crashes (faults.ts). */
  sessionCrashShare: number;
  /** A planted fault (see the module comment). */
  plant?: Plant;
  /** Append the server's output here (server-process.ts); none: only its tail on failure. */
  serverLogPath?: string;
  log: (line: string) => void;
  /** Ends the run early (as if the duration had passed); everything is still cleaned up. */
  signal?: AbortSignal;
}

export interface RunFigures extends FaultCounts {
  /** Operations that reached the server or may have (refused connections excluded). */
  ops: number;
  refused: number;
  ambiguous: number;
  /** Listing judgements, and the mismatches they found due (check/listing.ts). */
  listingChecks: number;
  listingMismatches: number;
}

export async function runTorture(options: RunOptions): Promise<RunFigures> {
  const root = new Rng(options.seed);
  const faultRng = root.fork();
  const stateDir = mkdtempSync(join(tmpdir(), "shiftlock-torture-state-"));
  const server = new ServerProcess(
    stateDir,
    options.plant === "listing-off" ? "--listing-index off" : "",
    options.serverLogPath,
  );
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
  await server.start();
  options.log(`server ${server.url}, state ${stateDir}, history ${options.historyPath}`);

  const figures: RunFigures = {
    ops: 0,
    refused: 0,
    ambiguous: 0,
    crashes: 0,
    pauses: 0,
    lapses: 0,
    sessionCrashes: 0,
    listingChecks: 0,
    listingMismatches: 0,
  };
  const endAt = Date.now() + options.durationS * 1_000;
  const stopped = (): boolean => Date.now() >= endAt || options.signal?.aborted === true;
  const knowledge = new Knowledge();
  const baseUrl = (): string => server.url;
  const gate = new Gate();
  const onOp: ClientContext["onOp"] = (outcome) => {
    if (outcome.type === "error" && outcome.code === "unavailable") figures.refused++;
    else figures.ops++;
    if (outcome.type === "unknown") figures.ambiguous++;
  };
  const judge = async (point: QuietPoint): Promise<void> => {
    const entry = await judgeListing({ baseUrl, keys, knowledge, timeoutMs: options.timeoutMs }, point);
    history.write(entry);
    const { mismatches, pending } = listingVerdict(entry);
    figures.listingChecks++;
    figures.listingMismatches += mismatches.length;
    const unjudged = pending.length === 0 ? "" : `, ${pending.length} unjudged`;
    options.log(`listing ${point.label}: ${mismatches.length} mismatches${unjudged} (${entry.rounds} rounds)`);
    for (const m of mismatches.slice(0, 3)) options.log(`  ${m.object}: ${m.message}`);
  };
  try {
    const watchers = [
      ...keys.claims.map((claim) =>
        watchClaimForever({ namespace, baseUrl, history, rng: root.fork(), stopped }, claim),
      ),
      ...keys.scopes.map((scope) =>
        watchScopeForever({ namespace, baseUrl, history, rng: root.fork(), stopped }, scope),
      ),
    ];
    const context = (id: number, rng: Rng, clientStopped: () => boolean): ClientContext => ({
      id,
      rng,
      baseUrl,
      history,
      keys,
      knowledge,
      timeoutMs: options.timeoutMs,
      gate,
      stopped: clientStopped,
      onOp,
    });
    const clients = Array.from({ length: options.clients }, (_, id) => runClient(context(id, root.fork(), stopped)));
    // Forked after every client: the lapse crashes move no choice of theirs.
    const lapseRng = root.fork();
    const setUpClient = context(options.clients, lapseRng.fork(), () => false);
    // Forked after those: the sessions and their crashes move no other choice either.
    const sessionRng = root.fork();
    const leased = keys.generations.slice(0, options.sessions);
    knowledge.sessionGenerations.push(...leased);
    const board = new SessionBoard();
    const sessions = leased.map((generation, i) =>
      runSession(
        context(options.clients + 1 + i, sessionRng.fork(), stopped),
        generation,
        leased.filter((g) => g !== generation),
        board,
      ),
    );
    const sessionCrashClient = context(options.clients + 1 + leased.length, sessionRng.fork(), () => false);
    const faults = runFaults({
      server,
      history,
      rng: faultRng,
      meanIntervalMs: options.faultEveryMs,
      crashShare: options.crashShare,
      stopped,
      log: options.log,
      lapse: {
        rng: lapseRng,
        share: options.lapseShare,
        quiesce: () => gate.close(),
        hold: (ttlMs) => holdEverything(setUpClient, ttlMs),
        judge,
        resume: () => gate.open(),
      },
      ...(leased.length === 0
        ? {}
        : {
            session: {
              rng: sessionRng,
              share: options.sessionCrashShare,
              end: () => endForCrash(sessionCrashClient, board),
              hold: () => holdForCrash(sessionCrashClient, board)?.deadlineMs,
              release: () => releaseHeld(board),
            },
          }),
    });
    const progress = setInterval(() => options.log(`ops ${figures.ops}, refused ${figures.refused}`), 10_000);
    const counts = await faults;
    Object.assign(figures, counts);
    await Promise.all([...clients, ...sessions]);
    const quietAtMs = Date.now();
    // The sessions ended their leases as they stopped: give the ends time to reach the claims.
    const settledMs = Math.max(LONGEST_DEADLINE_MS + LAPSE_SLACK_MS, leased.length > 0 ? RELEASE_BOUND_MS + 500 : 0);
    await judge({ label: "end", quietAtMs, leasesFreeAtMs: quietAtMs + settledMs });
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
