/**
 * The command a `shiftlock … run` holds a lease for: start it, forward signals to it, stop it
 * when the lease is lost, and turn how it ended into an exit status.
 *
 * Guarantees:
 * - The command runs in its own process group and session (like GNU `timeout`), with the
 *   caller's stdio and environment plus the lease's variables. A signal reaches it once —
 *   forwarded by shiftlock to the whole group — not a second time from the terminal, and a
 *   kill on loss reaches everything the command started (a `sh -c` wrapper's children too).
 * - Loss of the lease (`lost` aborts): SIGTERM to the group at once, SIGKILL after
 *   `graceMs` if the command is still running, and SIGKILL to whatever is left of the group
 *   once the command exited. The outcome then says `lost`.
 * - Every SIGINT/SIGTERM reported by `onSignal` is forwarded as is; the command decides
 *   when it ends, and the supervision lasts until it does.
 * - The exit status is the command's own, or 128 + the signal number when a signal ended
 *   it (the shell's convention); 127 when the program was not found, 126 when it could not
 *   be executed.
 *
 * Does not: kill the command when shiftlock itself is killed with SIGKILL (the lease then
 * expires on the server while the command may still run: fence your writes with the
 * token), or stop what is left of the group after a normal exit. A command that reads the
 * terminal is not in the terminal's foreground group: run non-interactive commands.
 */
import { spawn } from "node:child_process";
import { constants } from "node:os";
import { systemClock, type Clock } from "../core/clock.ts";

/** A signal shiftlock forwards to the command. */
export type ForwardedSignal = "SIGINT" | "SIGTERM";

export interface SuperviseOptions {
  /** Program and arguments (no shell). */
  command: readonly string[];
  env: Record<string, string | undefined>;
  /** Aborts when the lease is lost. */
  lost: AbortSignal;
  /** How long the command may run after SIGTERM on loss before SIGKILL (ms). */
  graceMs: number;
  /** Subscribe to the signals to forward; returns the unsubscribe function. */
  onSignal: (listener: (signal: ForwardedSignal) => void) => () => void;
  /** One line for the operator (stderr). */
  note: (message: string) => void;
  clock?: Clock;
}

export interface ChildOutcome {
  /** The exit status to report for the command (see the module doc). */
  status: number;
  /** The lease was lost while the command ran (it was stopped). */
  lost: boolean;
  /** The command could not be started (status 126 or 127). */
  notStarted: boolean;
}

/** Exit status for a command that was not found / could not be executed, as shells use. */
export const NOT_FOUND_STATUS = 127;
export const NOT_EXECUTABLE_STATUS = 126;

/** 128 + n for a signal, as shells report it. */
export function signalStatus(signal: NodeJS.Signals): number {
  return 128 + (constants.signals[signal] ?? 0);
}

/** Run the command to its end under the lease. Never rejects. */
export async function superviseChild(o: SuperviseOptions): Promise<ChildOutcome> {
  const clock = o.clock ?? systemClock;
  const [program, ...args] = o.command;
  if (program === undefined) return { status: NOT_FOUND_STATUS, lost: false, notStarted: true };
  let lost = false;
  const stopTimers = new AbortController();
  let unsubscribe = (): void => {};
  let onLost = (): void => {};
  try {
    // src/env.d.ts declares the Worker's vars on ProcessEnv; a child's environment is any map.
    const env = o.env as NodeJS.ProcessEnv;
    const child = spawn(program, args, { stdio: "inherit", env, detached: true });
    const group = (signal: NodeJS.Signals): void => {
      if (child.pid === undefined) return;
      try {
        process.kill(-child.pid, signal);
      } catch {
        // ESRCH: the group is gone already.
      }
    };
    const ended = new Promise<ChildOutcome>((resolve) => {
      child.once("error", (err: NodeJS.ErrnoException) => {
        o.note(`cannot run ${JSON.stringify(program)}: ${err.message}`);
        const status = err.code === "ENOENT" ? NOT_FOUND_STATUS : NOT_EXECUTABLE_STATUS;
        resolve({ status, lost, notStarted: true });
      });
      child.once("exit", (code, signal) => {
        if (lost) group("SIGKILL"); // nothing of the command may outlive the loss
        resolve({ status: code ?? signalStatus(signal ?? "SIGKILL"), lost, notStarted: false });
      });
    });
    unsubscribe = o.onSignal((signal) => group(signal));
    onLost = (): void => {
      if (lost) return;
      lost = true;
      o.note(`${describeLoss(o.lost.reason)}; sending SIGTERM to the command (SIGKILL after ${o.graceMs} ms)`);
      group("SIGTERM");
      clock.sleep(o.graceMs, stopTimers.signal).then(
        () => {
          o.note("the command outlived the grace period; sending SIGKILL");
          group("SIGKILL");
        },
        () => undefined,
      );
    };
    if (o.lost.aborted) onLost();
    else o.lost.addEventListener("abort", onLost, { once: true });
    return await ended;
  } catch (err) {
    // spawn throws synchronously only for arguments it cannot pass (e.g. a NUL byte).
    o.note(`cannot run ${JSON.stringify(program)}: ${err instanceof Error ? err.message : String(err)}`);
    return { status: NOT_EXECUTABLE_STATUS, lost, notStarted: true };
  } finally {
    stopTimers.abort();
    unsubscribe();
    o.lost.removeEventListener("abort", onLost);
  }
}

/** "lease lost (<why>)": the refusal or deadline behind a loss, not the wrapper's text. */
function describeLoss(reason: unknown): string {
  const why = reason instanceof Error && reason.cause instanceof Error ? reason.cause : reason;
  return why instanceof Error ? `lease lost (${why.message})` : "lease lost";
}
