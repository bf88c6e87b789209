/**
 * `npm run torture -- [--duration-s 60] [--clients 8] [--seed N] [--history FILE]
 *   [--fault-every-s 6] [--crash-share 0.6] [--lapse-share 0.5] [--sessions N]
 *   [--session-crash-share 0.4] [--timeout-ms 1500] [--plant listing-off] [--server-log FILE]`
 * `npm run torture -- --check FILE`
 *
 * Runs the torture test (runner.ts) against the server as `npm start` runs it, or re-checks
 * a saved history, then runs every checker (check/index.ts) and prints, last,
 * `ops N, crashes C, pauses P, ambiguous A, unchecked U, violations V, listing mismatches M`
 * (U: operations a checker skipped or gave up on; M: listing entries that differed from
 * their objects past the listing's lag bound, and wrong `/stats` tallies, at the quiet
 * points). Exit status 1 when V > 0 or M > 0, 2 for bad arguments. `--lapse-share` is the
 * share of crashes timed against deadlines and followed by a listing judgement (faults.ts);
 * `--sessions` the number of session clients (sessions.ts: generations that keep leases and
 * hold bound claims; default a third of the clients, at least 2; 0 turns them off) and
 * `--session-crash-share` the share of the other crashes timed on a session's lease;
 * `--plant listing-off` restarts the server with the listing switched off after the first
 * crash, a fault the run must report (M > 0); `--server-log` appends everything the server
 * prints, across its restarts, to FILE (each line prefixed with its wall-clock ms). The seed (printed first; random when not
 * given) reproduces the run's schedule: its operations, arguments and faults. SIGINT or
 * SIGTERM ends a run early (the server is stopped, the partial history checked).
 */
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { runChecks } from "./check/index.ts";
import { figures } from "./check/figures.ts";
import { readHistory } from "./history.ts";
import { PLANTS, runTorture, type Plant } from "./runner.ts";

function usage(message: string): never {
  console.error(`torture: ${message}`);
  console.error(
    "usage: torture [--duration-s 60] [--clients 8] [--seed N] [--history FILE] [--fault-every-s 6] [--crash-share 0.6] [--lapse-share 0.5] [--sessions N] [--session-crash-share 0.4] [--timeout-ms 1500] [--plant listing-off] [--server-log FILE] | --check FILE",
  );
  process.exit(2);
}

let values: Record<string, string | undefined>;
try {
  ({ values } = parseArgs({
    options: {
      "duration-s": { type: "string", default: "60" },
      clients: { type: "string", default: "8" },
      seed: { type: "string" },
      history: { type: "string" },
      "fault-every-s": { type: "string", default: "6" },
      "crash-share": { type: "string", default: "0.6" },
      "lapse-share": { type: "string", default: "0.5" },
      sessions: { type: "string" },
      "session-crash-share": { type: "string", default: "0.4" },
      "timeout-ms": { type: "string", default: "1500" },
      plant: { type: "string" },
      "server-log": { type: "string" },
      check: { type: "string" },
    },
    strict: true,
    allowPositionals: false,
  }));
} catch (err) {
  usage(err instanceof Error ? err.message : String(err));
}

function number(name: string, min: number, max: number): number {
  const value = Number(values[name]);
  if (!Number.isFinite(value) || value < min || value > max) usage(`--${name} must be a number in ${min}..${max}`);
  return value;
}

const log = (line: string): void => {
  process.stdout.write(`${new Date().toISOString()} ${line}\n`);
};

let historyPath: string;
if (values["check"] !== undefined) {
  historyPath = values["check"];
} else {
  const seed = values["seed"] === undefined ? Math.floor(Math.random() * 2 ** 31) : number("seed", 0, 2 ** 32 - 1);
  historyPath = values["history"] ?? join(tmpdir(), `shiftlock-torture-${seed}-${Date.now()}.jsonl`);
  const plant = values["plant"];
  if (plant !== undefined && !(PLANTS as readonly string[]).includes(plant))
    usage(`--plant must be one of ${PLANTS.join(", ")}`);
  log(`seed ${seed}${plant === undefined ? "" : `, planted fault ${plant}`}`);
  const clients = Math.floor(number("clients", 1, 1_000));
  // SIGINT/SIGTERM end the run early: the server is stopped and the partial history checked.
  const interrupt = new AbortController();
  process.once("SIGINT", () => interrupt.abort());
  process.once("SIGTERM", () => interrupt.abort());
  await runTorture({
    signal: interrupt.signal,
    durationS: number("duration-s", 1, 24 * 3600),
    clients,
    // At most one per generation of the key space (keySpace caps them at 8).
    sessions:
      values["sessions"] === undefined ? Math.max(2, Math.ceil(clients / 3)) : Math.floor(number("sessions", 0, 8)),
    sessionCrashShare: number("session-crash-share", 0, 1),
    seed,
    historyPath,
    faultEveryMs: number("fault-every-s", 0.5, 3600) * 1_000,
    crashShare: number("crash-share", 0, 1),
    lapseShare: number("lapse-share", 0, 1),
    timeoutMs: number("timeout-ms", 100, 60_000),
    ...(plant === undefined ? {} : { plant: plant as Plant }),
    ...(values["server-log"] === undefined ? {} : { serverLogPath: values["server-log"] }),
    log,
  });
}

const history = readHistory(historyPath);
const report = runChecks(history);
for (const line of report.lines) log(line);
const f = figures(history);
log(`history ${historyPath}; refused ${f.refused}`);
const s = f.sessions;
log(
  `sessions: ${s.keepalives} keepalives, ${s.channels} lease channels (${s.pings} pings), ${s.leaseEnds} lease ends, ${s.boundCalls} bound claim calls (${s.boundAnswered} succeeded), ${s.crashes} session crashes`,
);
process.stdout.write(
  `ops ${f.ops}, crashes ${f.crashes}, pauses ${f.pauses}, ambiguous ${f.ambiguous}, unchecked ${report.unchecked}, violations ${report.violations}, listing mismatches ${report.listingMismatches}\n`,
);
process.exit(report.violations > 0 || report.listingMismatches > 0 ? 1 : 0);
