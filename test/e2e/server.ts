/**
 * Start the real server the way README's `npm start` does (same script), on a fresh state
 * directory, and stop it afterwards. The server picks its own port (`--port 0`) and prints
 * it: a port probed free here and bound later could be taken in between by another test
 * file's server, and the test would then talk to that one.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { closeSync, fstatSync, mkdtempSync, openSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

export interface RunningServer {
  url: string;
  stateDir: string;
  /** Process group of everything the server started (the front and workerd). */
  pgid: number;
  stop(): Promise<void>;
}

/**
 * A TCP port nobody listens on right now (127.0.0.1), for a test that needs the same port
 * across restarts; it may be taken before it is bound (prefer `--port 0`).
 */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const address = srv.address();
      const port = typeof address === "object" && address !== null ? address.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

/**
 * The `npm start` command line with its port and state directory set. `npm start` is
 * "build, then serve"; `npm test` has built already, so only the serving half runs here.
 */
export function startCommand(port: number, stateDir: string): string {
  const pkg = JSON.parse(readFileSync("package.json", "utf8")) as { scripts: Record<string, string> };
  const serve = pkg.scripts["start"]?.split(" && ").at(-1);
  if (serve === undefined) throw new Error("package.json has no start script");
  return `${serve} --port ${port} --persist-to ${stateDir}`;
}

export async function startServer(stateDir = mkdtempSync(join(tmpdir(), "shiftlock-e2e-"))): Promise<RunningServer> {
  // What the server prints goes to a file beside its state, not through this process: a
  // test or the demo must not be woken by every log line (one per mutation) its own load causes.
  const outputPath = join(stateDir, "server-output.log");
  const outputFd = openSync(outputPath, "a");
  // A restart on the same state appends: this server's lines start here.
  const startOffset = fstatSync(outputFd).size;
  const child: ChildProcess = spawn(startCommand(0, stateDir), {
    shell: true,
    detached: true,
    stdio: ["ignore", outputFd, outputFd],
    env: { ...process.env, WRANGLER_SEND_METRICS: "false", NO_COLOR: "1" },
  });
  closeSync(outputFd);
  const output = (): string => readFileSync(outputPath, "utf8").slice(-20_000);
  let url: string | undefined;
  const deadline = Date.now() + 60_000;
  for (;;) {
    url ??= /^shiftlock listening on (http:\/\/\S+)/m.exec(readFileSync(outputPath, "utf8").slice(startOffset))?.[1];
    try {
      if (url !== undefined && (await fetch(`${url}/healthz`)).ok) break;
    } catch {
      // not answering yet
    }
    if (child.exitCode !== null || Date.now() > deadline) {
      throw new Error(`server did not start (exit ${child.exitCode}):\n${output()}`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  return {
    url,
    stateDir,
    pgid: child.pid ?? 0,
    /** SIGTERM to the group; resolves once every process of it is gone (state files closed). */
    async stop() {
      if (child.pid === undefined) return;
      if (child.exitCode === null) {
        const exited = new Promise((r) => child.once("exit", r));
        process.kill(-child.pid, "SIGTERM");
        await exited;
      }
      await groupGone(child.pid, "SIGTERM");
    },
  };
}

/** True while any process of group `pgid` exists. */
function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Resolves once no process of group `pgid` is left; throws 10 s after `signal` was sent. */
export async function groupGone(pgid: number, signal: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (groupAlive(pgid)) {
    if (Date.now() > deadline) throw new Error(`process group ${pgid} still alive 10 s after ${signal}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

export function removeState(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
}
