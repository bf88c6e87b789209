/**
 * What permessage-deflate costs a watch fan-out (docs/performance.md, "WebSocket
 * compression"): W watchers of one coord scope over `ws` with its defaults (it offers
 * permessage-deflate, as browsers do), then P publishes; reported are the frames, the wall
 * time until every watcher had every event, the CPU of the server's process group (workerd,
 * the Node front and Miniflare's host, from /proc) and this process's CPU.
 *
 * It serves the checkout it runs in, the way `npm start` does (built bundle, wrangler.toml),
 * so the comparison is two checkouts: this one (`no_web_socket_compression` on) and one with
 * that flag removed from wrangler.toml, each after `npm run build`:
 *
 *   W=200 P=100 node --import tsx bench/ws-compression.ts
 *
 * Linux only (/proc). Prints one JSON line.
 */
import { readFileSync, readdirSync } from "node:fs";
import { performance } from "node:perf_hooks";
import WebSocket from "ws";
import { removeState, startServer } from "../test/e2e/server.ts";

const W = Number(process.env["W"] ?? 200);
const P = Number(process.env["P"] ?? 100);

/** Processes of process group `pgid`. */
function groupPids(pgid: number): string[] {
  return readdirSync("/proc")
    .filter((d) => /^\d+$/.test(d))
    .filter((d) => {
      try {
        return Number(readFileSync(`/proc/${d}/stat`, "utf8").split(") ")[1]!.split(" ")[2]) === pgid;
      } catch {
        return false;
      }
    });
}

/** User + system CPU of `pids`, in ms (clock ticks of 10 ms). */
function cpuMs(pids: readonly string[]): number {
  let sum = 0;
  for (const pid of pids) {
    try {
      const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
      sum += (Number(fields[11]) + Number(fields[12])) * 10;
    } catch {
      // gone
    }
  }
  return sum;
}

const server = await startServer();
try {
  const base = `${server.url}/v1/ns/ws-compression-${Date.now()}/volumes/v/stores/s`;
  const headers = { authorization: "Bearer dev-token", "content-type": "application/json" };
  const grant = await fetch(`${base}/leases`, {
    method: "POST",
    headers,
    body: JSON.stringify({ participantId: "bench", ttlMs: 600_000 }),
  });
  const granted = await grant.json<{ lease: { leaseId: string } }>();
  let received = 0;
  let extensions = "";
  const sockets: WebSocket[] = [];
  for (let i = 0; i < W; i++) {
    const ws = new WebSocket(`${base.replace(/^http/, "ws")}/watch`, {
      headers: { authorization: "Bearer dev-token" },
    });
    await new Promise<void>((resolve, reject) => {
      ws.once("message", () => resolve());
      ws.once("error", reject);
    });
    extensions = ws.extensions;
    let events = 0;
    ws.on("message", () => {
      received++;
      // Acknowledge as docs/protocol.md#listing asks, so no watcher is closed as lagging.
      if (++events % 200 === 0) ws.send(JSON.stringify({ type: "ack", count: 200 }));
    });
    sockets.push(ws);
  }
  const pids = groupPids(server.pgid);
  const server0 = cpuMs(pids);
  const client0 = process.cpuUsage();
  const started = performance.now();
  for (let i = 0; i < P; i++) {
    await fetch(`${base}/leases/${granted.lease.leaseId}/publish`, {
      method: "POST",
      headers,
      body: JSON.stringify({ root: { n: i, pad: "x".repeat(200) } }),
    });
  }
  while (received < W * P) await new Promise((r) => setTimeout(r, 10));
  const wallMs = Math.round(performance.now() - started);
  const client = process.cpuUsage(client0);
  console.log(
    JSON.stringify({
      extensions,
      watchers: W,
      publishes: P,
      frames: W * P,
      wallMs,
      serverCpuMs: cpuMs(pids) - server0,
      clientCpuMs: Math.round((client.user + client.system) / 1000),
    }),
  );
  for (const ws of sockets) ws.terminate();
} finally {
  await server.stop();
  removeState(server.stateDir);
}
