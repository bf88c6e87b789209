/**
 * The server under torture: `npm start`'s serving command (test/e2e/server.ts
 * `startCommand`) on its own port and state directory, spawned as its own process group so
 * a fault reaches the front and workerd together.
 *
 * Guarantees:
 * - The first start picks its own port (`--port 0`, read from the line it prints): a port
 *   probed free and bound later could be taken in between by another test's server. Every
 *   restart binds that same port again, so clients keep their URL.
 * - `crash()` is SIGKILL to the whole group and returns once no process of it is left;
 *   `restart()` starts the same command on the same port and state directory and returns
 *   once `/healthz` answers.
 * - `pause()`/`resume()` are SIGSTOP/SIGCONT to the group: the server keeps its sockets but
 *   answers nothing (and fires no alarm) until resumed.
 * - `stop()` leaves nothing running (SIGCONT, then SIGKILL to the group).
 * - Every start after the first adds `restartArgs` to the command (the planted fault of
 *   `--plant listing-off`: the server comes back with `--listing-index off`).
 *
 * - With a `logPath`, every line the server prints is appended there, each prefixed with the
 *   wall-clock ms it arrived at and the start it came from (`<ms> #<start> <line>`), so a
 *   verdict can be laid beside what the server did across restarts.
 *
 * Does not: remove the state directory (the caller owns it).
 */
import { appendFileSync } from "node:fs";
import { spawn, type ChildProcess } from "node:child_process";
import { groupGone, startCommand } from "../e2e/server.ts";

export class ServerProcess {
  private child: ChildProcess | undefined;
  private output = "";
  private starts = 0;
  /** The port the first start bound (0 until then). */
  private port = 0;
  /** How long the longest start so far took, from spawn to `/healthz` answering (ms). */
  longestStartMs = 0;

  constructor(
    readonly stateDir: string,
    /** Added to the serving command of every start but the first. */
    private readonly restartArgs = "",
    /** Where to append the server's output, all starts together (none: kept only in memory). */
    private readonly logPath?: string,
  ) {}

  /** The server's URL (known once the first start printed its port). */
  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** Start (or restart) the server; resolves once it serves. */
  async start(timeoutMs = 60_000): Promise<void> {
    this.output = "";
    const startedAtMs = Date.now();
    const extra = this.starts++ > 0 && this.restartArgs !== "" ? ` ${this.restartArgs}` : "";
    const child = spawn(startCommand(this.port, this.stateDir) + extra, {
      shell: true,
      detached: true,
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, WRANGLER_SEND_METRICS: "false", NO_COLOR: "1" },
    });
    this.child = child;
    child.stdout?.on("data", (d: Buffer) => this.keep(d));
    child.stderr?.on("data", (d: Buffer) => this.keep(d));
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      this.port ||= Number(/^shiftlock listening on http:\/\/[^:\s]+:(\d+)/m.exec(this.output)?.[1] ?? 0);
      try {
        if (this.port === 0) throw new Error("no port printed yet");
        const res = await fetch(`${this.url}/healthz`, { signal: AbortSignal.timeout(1_000) });
        if (res.ok) {
          this.longestStartMs = Math.max(this.longestStartMs, Date.now() - startedAtMs);
          return;
        }
      } catch {
        // not listening yet
      }
      if (child.exitCode !== null || Date.now() > deadline) {
        throw new Error(`server did not start (exit ${child.exitCode}):\n${this.output}`);
      }
      await sleep(100);
    }
  }

  /** SIGKILL the process group; resolves once every process of it is gone. */
  async crash(): Promise<void> {
    await this.signalAndWait("SIGKILL");
  }

  pause(): void {
    this.signal("SIGSTOP");
  }

  resume(): void {
    this.signal("SIGCONT");
  }

  /** Stop for good (a paused group is resumed first so the kill lands). */
  async stop(): Promise<void> {
    this.signal("SIGCONT");
    await this.signalAndWait("SIGKILL");
  }

  /** The last few KiB of the server's output (for failure reports). */
  tail(): string {
    return this.output;
  }

  private keep(data: Buffer): void {
    const text = data.toString();
    this.output = (this.output + text).slice(-8_192);
    if (this.logPath === undefined) return;
    const atMs = Date.now();
    const lines = text.split("\n").filter((line) => line !== "");
    appendFileSync(this.logPath, lines.map((line) => `${atMs} #${this.starts} ${line}\n`).join(""));
  }

  private signal(signal: NodeJS.Signals): void {
    const pid = this.child?.pid;
    if (pid === undefined) return;
    try {
      process.kill(-pid, signal);
    } catch {
      // the group is already gone
    }
  }

  private async signalAndWait(signal: NodeJS.Signals): Promise<void> {
    const pid = this.child?.pid;
    if (pid === undefined) return;
    this.signal(signal);
    await groupGone(pid, signal);
    this.child = undefined;
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
