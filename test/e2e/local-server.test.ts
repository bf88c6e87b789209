// The local server as `npm start` runs it (src/serve): the Node front passes on what
// workerd cannot see locally (a departed caller, a dot segment), a shutdown leaves
// nothing running, and a second server on a taken port says so in one line.
import { spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync } from "node:fs";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect, inject, it, vi } from "vitest";
import WebSocket from "ws";
import { DOT_SEGMENT_MARK } from "../../src/serve/dot-segments.ts";
import { removeState, startCommand, startServer } from "./server.ts";

const auth = { Authorization: "Bearer dev-token", "Content-Type": "application/json" };

it("a waiting acquire whose caller disconnects leaves the queue (docs/protocol.md#coord), with no waiterId sent", async () => {
  const scope = `${inject("serverUrl")}/v1/ns/front-${crypto.randomUUID()}/volumes/v/stores/s`;
  const acquire = (body: object, signal?: AbortSignal): Promise<Response> =>
    fetch(`${scope}/leases`, {
      method: "POST",
      headers: auth,
      body: JSON.stringify(body),
      ...(signal ? { signal } : {}),
    });
  const holder = await (await acquire({ participantId: "a", ttlMs: 30_000 })).json<{ lease: { leaseId: string } }>();
  const keepalive = async (): Promise<boolean> => {
    const res = await fetch(`${scope}/leases/${holder.lease.leaseId}/keepalive`, { method: "POST", headers: auth });
    return (await res.json<{ wantLock: boolean }>()).wantLock;
  };

  const leaving = new AbortController();
  const waiter = acquire({ participantId: "b", ttlMs: 30_000, waitMs: 60_000 }, leaving.signal).catch(
    (err: unknown) => err,
  );
  await vi.waitFor(async () => expect(await keepalive()).toBe(true), { timeout: 10_000, interval: 20 });
  leaving.abort();
  expect(await waiter).toBeInstanceOf(Error);
  // The front saw the socket close and withdrew the wait: nobody is queued any more.
  await vi.waitFor(async () => expect(await keepalive()).toBe(false), { timeout: 10_000, interval: 20 });

  await fetch(`${scope}/leases/${holder.lease.leaseId}`, { method: "DELETE", headers: auth });
  const next = await acquire({ participantId: "c", ttlMs: 1_000 });
  expect(next.status).toBe(201);
}, 30_000);

it("a '.' or '..' path segment is never a success (docs/protocol.md#names-and-paths), though workerd alone would resolve it", async () => {
  // `…/stores/s/keys/../capability` resolves to the store scope's capability route, a 200.
  // A raw path (as curl --path-as-is sends it): fetch() would resolve it before sending.
  const { hostname, port } = new URL(inject("serverUrl"));
  const answer = await new Promise<{ status: number; body: string }>((resolve, reject) => {
    const raw = request(
      {
        host: hostname,
        port,
        path: "/v1/ns/front-dots/volumes/v/stores/s/keys/../capability",
        headers: { Authorization: "Bearer dev-token" },
      },
      (res) => {
        let body = "";
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => (body += chunk));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    raw.on("error", reject);
    raw.end();
  });
  expect(answer.status).toBe(400);
  expect(JSON.parse(answer.body)).toMatchObject({
    error: { code: "invalid_request", field: "path", message: expect.stringContaining(DOT_SEGMENT_MARK) as string },
  });
});

it("serves watch sockets without permessage-deflate, even to a client that offers it", async () => {
  // `ws` offers permessage-deflate by default, as browsers do; compression of small watch
  // frames costs CPU on both ends for few bytes (wrangler.toml, docs/performance.md).
  const url = `${inject("serverUrl").replace(/^http/, "ws")}/v1/ns/front-ws/volumes/v/stores/s/watch`;
  const socket = new WebSocket(url, { headers: { Authorization: "Bearer dev-token" } });
  const first = await new Promise<string>((resolve, reject) => {
    socket.once("message", (data: Buffer) => resolve(data.toString()));
    socket.once("error", reject);
  });
  expect(JSON.parse(first)).toMatchObject({ type: "ready" });
  expect(socket.extensions).toBe("");
  socket.close();
});

it("SIGTERM closes the front and workerd: the port is free and no process of the group is left", async () => {
  const server = await startServer();
  expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
  const before = Date.now();
  await server.stop(); // resolves once the whole group is gone (or throws after 10 s)
  expect(Date.now() - before).toBeLessThan(10_000);
  await expect(fetch(`${server.url}/healthz`)).rejects.toThrow();
  expect(() => process.kill(-server.pgid, 0)).toThrow(/ESRCH/);
  removeState(server.stateDir);
}, 60_000);

it("a second server on a port in use prints one line naming the port and what to do, exits 1, and starts nothing", () => {
  const port = Number(new URL(inject("serverUrl")).port);
  const stateDir = mkdtempSync(join(tmpdir(), "shiftlock-second-"));
  const second = spawnSync(startCommand(port, stateDir), {
    shell: true,
    encoding: "utf8",
    timeout: 30_000,
    env: { ...process.env, NO_COLOR: "1" },
  });
  expect(second.status).toBe(1);
  expect(second.stdout).toBe("");
  expect(second.stderr.trimEnd().split("\n")).toEqual([
    `shiftlock serve: port ${port} on 127.0.0.1 is in use (another npm start?): stop that server, or serve on another port with npm start -- --port ${port + 1}`,
  ]);
  // workerd never started on that state directory (it would run the state's pending alarms).
  expect(readdirSync(stateDir)).toEqual([]);
  removeState(stateDir);
});
