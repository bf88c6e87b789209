// The local server as `npm start` runs it (src/serve): the Node front passes on what
// workerd cannot see locally, and a shutdown leaves nothing running.
import { expect, inject, it, vi } from "vitest";
import { removeState, startServer } from "./server.ts";

const auth = { Authorization: "Bearer dev-token", "Content-Type": "application/json" };

it("a waiting acquire whose caller disconnects leaves the queue (SPEC §4), with no waiterId sent", async () => {
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
