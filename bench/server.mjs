/**
 * Start the server exactly as README's `npm start` does (the same `start` script from
 * package.json), on a free loopback port with a fresh state directory, for the benchmark.
 *
 * Guarantees: the command line is the `start` script with only its port and `--persist-to`
 * directory replaced (the same rule as test/e2e/server.ts), so the figures are those of the
 * server users run locally. `stop()` ends the whole process group it started and removes the
 * state directory. It does not guarantee the port stays free between probing and binding.
 */
import { execFileSync, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** @returns {Promise<number>} a port that was free on 127.0.0.1 a moment ago */
export async function freePort() {
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
 * The `npm start` command line with its port and state directory replaced.
 * @param {number} port
 * @param {string} stateDir
 */
export function startCommand(port, stateDir) {
  const pkg = /** @type {{ scripts?: Record<string, unknown> }} */ (JSON.parse(readFileSync("package.json", "utf8")));
  const start = pkg.scripts?.["start"];
  if (typeof start !== "string") throw new Error("package.json has no start script");
  return start
    .replace("--port 8787", `--port ${port}`)
    .replace("--persist-to .wrangler/state", `--persist-to ${stateDir}`)
    .replace(/^wrangler /, "npx wrangler ");
}

/**
 * Resident memory of every process in a process group (wrangler, its dev proxy, workerd).
 * @param {number} pgid
 * @returns {number} megabytes, 0 when /proc is unavailable
 */
export function groupRssMb(pgid) {
  let kb = 0;
  let entries;
  try {
    entries = readdirSync("/proc");
  } catch {
    return 0;
  }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      // Fields after "(comm)": state ppid pgrp ...; comm may contain spaces.
      const rest = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (Number(rest[2]) !== pgid) continue;
      const status = readFileSync(`/proc/${entry}/status`, "utf8");
      const match = /VmRSS:\s+(\d+)\s+kB/.exec(status);
      if (match) kb += Number(match[1]);
    } catch {
      // the process exited while we looked
    }
  }
  return Math.round(kb / 1024);
}

/**
 * @typedef {object} RunningServer
 * @property {string} url base URL, e.g. http://127.0.0.1:40123
 * @property {number} pgid process group of every process of the server (for diagnostics)
 * @property {() => number} rssMb resident memory of the server's process group, MB
 * @property {() => Promise<void>} stop
 */

/** @type {string | undefined} */
let bundleDir;

/** Build the deployable bundle once per run (`wrangler deploy --dry-run`, as `npm run build`). */
function bundle() {
  if (bundleDir === undefined) {
    const dir = mkdtempSync(join(tmpdir(), "shiftlock-bench-dist-"));
    execFileSync("npx", ["wrangler", "deploy", "--dry-run", "--outdir", dir], {
      stdio: "ignore",
      env: { ...process.env, WRANGLER_SEND_METRICS: "false" },
    });
    bundleDir = dir;
  }
  return bundleDir;
}

/** Remove the bundle built for `--server=miniflare`, if any. */
export function cleanupBundle() {
  if (bundleDir !== undefined) rmSync(bundleDir, { recursive: true, force: true });
}

/**
 * @param {import("./options.mjs").ServerKind} [kind] `wrangler-dev` is `npm start`; `miniflare`
 *   serves the same bundle without the dev proxy (a diagnostic, see miniflare-child.mjs)
 * @returns {Promise<RunningServer>}
 */
export async function startServer(kind = "wrangler-dev") {
  const stateDir = mkdtempSync(join(tmpdir(), "shiftlock-bench-"));
  const port = await freePort();
  const command =
    kind === "miniflare"
      ? `node bench/miniflare-child.mjs ${bundle()} ${stateDir} ${port}`
      : startCommand(port, stateDir);
  const child = spawn(command, {
    shell: true,
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, WRANGLER_SEND_METRICS: "false", NO_COLOR: "1" },
  });
  // Detached, so the child leads its own process group: its pid is the group id.
  const pgid = child.pid;
  if (pgid === undefined) {
    rmSync(stateDir, { recursive: true, force: true });
    throw new Error(`could not start the server: ${command}`);
  }
  let output = "";
  // Keep only the tail: a long run logs a line per request.
  const keep = (/** @type {Buffer} */ d) => (output = (output + d.toString("utf8")).slice(-20_000));
  child.stdout.on("data", keep);
  child.stderr.on("data", keep);
  const url = `http://127.0.0.1:${port}`;
  const deadline = performance.now() + 60_000;
  for (;;) {
    try {
      const res = await fetch(`${url}/healthz`);
      if (res.ok) break;
    } catch {
      // not listening yet
    }
    if (child.exitCode !== null || performance.now() > deadline) {
      // Leave nothing behind: neither a half-started process group nor its state directory.
      try {
        process.kill(-pgid, "SIGKILL");
      } catch {
        // already gone
      }
      rmSync(stateDir, { recursive: true, force: true });
      throw new Error(`server did not start (exit ${child.exitCode}):\n${output}`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  return {
    url,
    pgid,
    rssMb: () => groupRssMb(pgid),
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((r) => child.once("exit", r));
        try {
          process.kill(-pgid, "SIGTERM");
        } catch {
          // already gone
        }
        const timer = setTimeout(() => {
          try {
            process.kill(-pgid, "SIGKILL");
          } catch {
            // already gone
          }
        }, 5_000);
        await exited;
        clearTimeout(timer);
      }
      rmSync(stateDir, { recursive: true, force: true });
    },
  };
}
