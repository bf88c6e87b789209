/* eslint-disable @typescript-eslint/no-explicit-any, @typescript-eslint/no-unsafe-return, @typescript-eslint/no-unsafe-argument, @typescript-eslint/no-unsafe-call -- JSON bodies under test are inspected loosely. */
// The listing after a crash of the real server (docs/listing.md "The lag guarantee"): a claim,
// a prepared transfer and a coord lease whose deadlines pass while `npm start` is down are
// listed as lapsed, and tallied, once it is back — with nobody calling them, so each object
// is started by its overdue alarm, which the runtime does without giving it its name. The
// worker tests cover each path with the clock in hand (test/worker/listing-recovery.test.ts);
// this one runs the path a user runs: the process killed, its state directory kept.
import { afterAll, describe, expect, it } from "vitest";
import { groupGone, removeState, startServer, type RunningServer } from "./server.ts";

const running: RunningServer[] = [];
let stateDir: string | undefined;

afterAll(async () => {
  for (const s of running.splice(0)) await s.stop();
  if (stateDir !== undefined) removeState(stateDir);
});

/** Long enough to be listed and killed before any deadline, on a busy machine. */
const TTL_MS = 10_000;
const AUTH = { authorization: "Bearer dev-token", "content-type": "application/json" };

async function call(url: string, method = "GET", body?: unknown): Promise<{ status: number; body: any }> {
  const res = await fetch(url, {
    method,
    headers: AUTH,
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: res.status, body: await res.json() };
}

describe("the listing after the server was killed", () => {
  it("lists a claim, a prepared transfer and a coord lease that lapsed while it was down", async () => {
    const first = await startServer();
    running.push(first);
    stateDir = first.stateDir;
    const ns = `restart-${crypto.randomUUID()}`;
    const api = (url: string, path: string) => `${url}/v1/ns/${ns}${path}`;

    const held = await call(api(first.url, "/claims/held/acquire"), "POST", { generationId: "gen-1", ttlMs: TTL_MS });
    expect(held.status).toBe(200);
    await call(api(first.url, "/claims/moving/acquire"), "POST", { generationId: "gen-1", ttlMs: TTL_MS });
    const prepared = await call(api(first.url, "/claims/moving/transfer/prepare"), "POST", {
      fromGeneration: "gen-1",
      toGeneration: "gen-2",
      token: "1",
      ttlMs: TTL_MS,
    });
    expect(prepared.status).toBe(200);
    const lease = await call(api(first.url, "/volumes/vol/stores/objects/leases"), "POST", {
      participantId: "writer",
      ttlMs: TTL_MS,
    });
    expect(lease.status).toBe(201);
    const deadlines = [held.body.claim.expiresAtMs, prepared.body.claim.expiresAtMs, lease.body.lease.expiresAtMs];

    const listing = async (url: string) => ({
      claims: (await call(api(url, "/claims"))).body.claims.map((c: any) => [c.name, c.phase, c.pendingSuccessor]),
      scopes: (await call(api(url, "/scopes"))).body.scopes.map((s: any) => [s.volumeId, s.held, s.holder]),
      byPhase: (await call(api(url, "/stats"))).body.claimsByPhase,
    });
    await expect
      .poll(() => listing(first.url), { timeout: 10_000, interval: 100 })
      .toEqual({
        claims: [
          ["held", "owned", ""],
          ["moving", "reserved", "gen-2"],
        ],
        scopes: [["vol", true, "writer"]],
        byPhase: { unowned: 0, owned: 1, reserved: 1, draining: 0 },
      });

    // Killed before any deadline: every expiry below falls due while nothing runs.
    expect(Date.now()).toBeLessThan(Math.min(...deadlines));
    process.kill(-first.pgid, "SIGKILL");
    await groupGone(first.pgid, "SIGKILL");
    running.splice(running.indexOf(first), 1);
    // The deadlines are the wall clock's (a real process): wait them out.
    await new Promise((r) => setTimeout(r, Math.max(...deadlines) - Date.now() + 100));

    const second = await startServer(first.stateDir);
    running.push(second);
    // Only the listing is read: a call to an object would start it by name and expire it itself.
    await expect
      .poll(() => listing(second.url), { timeout: 15_000, interval: 100 })
      .toEqual({
        claims: [
          ["held", "unowned", ""],
          ["moving", "unowned", ""],
        ],
        scopes: [["vol", false, ""]],
        byPhase: { unowned: 2, owned: 0, reserved: 0, draining: 0 },
      });
    // And the objects agree.
    for (const name of ["held", "moving"]) {
      expect((await call(api(second.url, `/claims/${name}`))).body.claim).toMatchObject({ phase: "unowned" });
    }
  }, 120_000);
});
