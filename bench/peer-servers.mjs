/**
 * The peers bench/peers.mjs compares shiftlock with — etcd and Redis — started privately for
 * one run: loopback only, on free ports (never 2379/2380/6379), with their data in a
 * temporary directory (never /var/lib), each as its own process group.
 *
 * Configuration, as shipped unless said: etcd with its defaults (one member, WAL fsync on
 * every commit — no `--unsafe-no-fsync`), logging errors only. Redis with its compiled-in
 * defaults (RDB save points included) plus `appendonly yes` (`appendfsync everysec`, the
 * default policy once the AOF is on): the durability Redis users usually pick for locks;
 * stated with the figures.
 *
 * Guarantees: `start*` resolves only once the peer answers (etcd `/health`, Redis `PING`);
 * a peer that does not start within 30 s fails the call and leaves nothing behind; `stop()`
 * (and Ctrl-C, the hard limit, the end of the run: bench/cleanup.mjs) ends the group and
 * removes the data directory. Does not tune either peer, or install them (see
 * {@link missingPeers}).
 */
import { execFileSync, spawn } from "node:child_process";
import { accessSync, constants, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import { track } from "./cleanup.mjs";
import { RedisClient } from "./redis-client.mjs";
import { freePort, groupMemory, stopGroup } from "./server.mjs";

export const PEER_BINARIES = ["etcd", "etcdctl", "redis-server"];
export const INSTALL_HINT =
  "apt-get update && apt-get install -y etcd-server etcd-client redis-server   (Debian/Ubuntu; benchmark only)";

/** @param {string} name @returns {boolean} an executable of that name is on PATH */
function onPath(name) {
  for (const dir of (process.env["PATH"] ?? "").split(delimiter)) {
    try {
      accessSync(join(dir, name), constants.X_OK);
      return true;
    } catch {
      // not here
    }
  }
  return false;
}

/** @returns {string[]} the peer programs not on PATH */
export function missingPeers() {
  return PEER_BINARIES.filter((b) => !onPath(b));
}

/**
 * @typedef {object} Peer
 * @property {string} name
 * @property {string} version
 * @property {string} address e.g. http://127.0.0.1:40111 or 127.0.0.1:40112
 * @property {number} port
 * @property {string} config one line: how it was started
 * @property {() => number} rssMb resident memory of its process group
 * @property {() => Promise<void>} stop
 */

/**
 * Spawn `command args` as its own process group, registered for cleanup together with its
 * data directory, and wait until `ready()` is true.
 * @param {string} name
 * @param {string} dataDir
 * @param {string} command
 * @param {string[]} args
 * @param {() => Promise<boolean>} ready
 */
async function startGroup(name, dataDir, command, args, ready) {
  const child = spawn(command, args, { detached: true, stdio: ["ignore", "ignore", "pipe"] });
  const pgid = child.pid;
  if (pgid === undefined) throw new Error(`could not start ${command}`);
  let stderr = "";
  child.stderr.on("data", (/** @type {Buffer} */ d) => (stderr = (stderr + d.toString("utf8")).slice(-4_000)));
  let stopped = false;
  const stop = track({
    name: `${name} (process group ${pgid})`,
    stop: async () => {
      if (stopped) return;
      stopped = true;
      await stopGroup(pgid);
      rmSync(dataDir, { recursive: true, force: true });
    },
    kill: () => {
      try {
        process.kill(-pgid, "SIGKILL");
      } catch {
        // already gone
      }
      rmSync(dataDir, { recursive: true, force: true });
    },
  });
  const deadline = performance.now() + 30_000;
  while (!(await ready().catch(() => false))) {
    if (child.exitCode !== null || performance.now() > deadline) {
      await stop();
      throw new Error(`${name} did not start (exit ${child.exitCode}): ${stderr}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return { pgid, stop };
}

/** @returns {Promise<Peer>} */
export async function startEtcd() {
  const dataDir = mkdtempSync(join(tmpdir(), "shiftlock-bench-etcd-"));
  const [clientPort, peerPort] = [await freePort(), await freePort()];
  const url = `http://127.0.0.1:${clientPort}`;
  const peerUrl = `http://127.0.0.1:${peerPort}`;
  const args = [
    "--name=bench",
    `--data-dir=${join(dataDir, "data")}`,
    `--listen-client-urls=${url}`,
    `--advertise-client-urls=${url}`,
    `--listen-peer-urls=${peerUrl}`,
    `--initial-advertise-peer-urls=${peerUrl}`,
    `--initial-cluster=bench=${peerUrl}`,
    "--logger=zap",
    "--log-level=error",
  ];
  const { pgid, stop } = await startGroup("etcd", dataDir, "etcd", args, async () => {
    const res = await fetch(`${url}/health`);
    const body = /** @type {{ health?: string }} */ (await res.json());
    return body.health === "true";
  });
  const version = /** @type {{ etcdserver?: string }} */ (await (await fetch(`${url}/version`)).json());
  return {
    name: "etcd",
    version: version.etcdserver ?? "unknown",
    address: url,
    port: clientPort,
    config: "one member, data in a temporary directory, default fsync (WAL synced per commit)",
    rssMb: () => groupMemory(pgid).totalMb,
    stop,
  };
}

/**
 * Keys left under `prefix` in etcd, read with etcdctl (every cycle must have deleted its key).
 * @param {string} url
 * @param {string} prefix
 */
export function etcdKeysLeft(url, prefix) {
  const out = execFileSync("etcdctl", [`--endpoints=${url}`, "get", prefix, "--prefix", "--keys-only", "-w", "json"], {
    env: { ...process.env, ETCDCTL_API: "3" },
  }).toString();
  return /** @type {{ count?: number }} */ (JSON.parse(out)).count ?? 0;
}

/** @returns {Promise<Peer>} */
export async function startRedis() {
  const dataDir = mkdtempSync(join(tmpdir(), "shiftlock-bench-redis-"));
  const port = await freePort();
  const args = [
    "--bind",
    "127.0.0.1",
    "--port",
    String(port),
    "--dir",
    dataDir,
    "--appendonly",
    "yes",
    "--appendfsync",
    "everysec",
    "--daemonize",
    "no",
    "--logfile",
    "",
  ];
  const ping = async () => {
    const c = await RedisClient.connect(port);
    try {
      return (await c.command("PING")) === "PONG";
    } finally {
      c.close();
    }
  };
  const { pgid, stop } = await startGroup("redis", dataDir, "redis-server", args, ping);
  const c = await RedisClient.connect(port);
  const info = String(await c.command("INFO", "server"));
  c.close();
  return {
    name: "redis",
    version: /redis_version:(\S+)/.exec(info)?.[1] ?? "unknown",
    address: `127.0.0.1:${port}`,
    port,
    config:
      "compiled-in defaults (RDB save points) + appendonly yes, appendfsync everysec; data in a temporary directory",
    rssMb: () => groupMemory(pgid).totalMb,
    stop,
  };
}
