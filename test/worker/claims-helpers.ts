// Shared helpers for the claims worker tests: claim URLs and stubs, unique names; requests
// and watch sockets go through router-client.ts.
import { runInDurableObject } from "cloudflare:test";
import { testEnv } from "./test-env.ts";
import type { ClaimObject } from "./test-entry.ts";
import type { ClaimResponseWire } from "../../src/protocol/claims.ts";
import { objectName } from "../../src/durable/object-names.ts";
import { type Watch, openWatchSocket, routerCall } from "./router-client.ts";

export type { Watch };

export const WRITE = "test-write-all";
export const READ = "test-read-all";

/** A fresh namespace/claim pair per test, so tests never share objects. */
export function unique(prefix = "c"): string {
  return `${prefix}-${crypto.randomUUID()}`;
}

export function claimUrl(ns: string, claim: string, suffix = ""): string {
  return `http://x/v1/ns/${encodeURIComponent(ns)}/claims/${encodeURIComponent(claim)}${suffix}`;
}

export function call(method: string, url: string, body?: unknown, token: string | null = WRITE) {
  return routerCall(method, url, body, token);
}

export const post = (url: string, body?: unknown, token: string | null = WRITE) => call("POST", url, body, token);
export const get = (url: string, token: string | null = WRITE) => call("GET", url, undefined, token);

/** Open a watch socket through the router and collect its messages. */
export function openWatch(ns: string, claim: string, query = "", token = READ): Promise<Watch> {
  return openWatchSocket(claimUrl(ns, claim, `/watch${query}`), token);
}

/** The claim's Durable Object stub, named exactly as the router names it. */
export function claimStub(ns: string, claim: string): DurableObjectStub<ClaimObject> {
  return testEnv.CLAIMS.getByName(objectName(ns, "claim", claim));
}

/**
 * Produce `cycles` acquire+release pairs (two events each) directly on the object, fast.
 * Returns the last version written.
 */
export async function churn(stub: DurableObjectStub<ClaimObject>, claim: string, cycles: number): Promise<bigint> {
  return runInDurableObject(stub, async (instance) => {
    let version = 0n;
    for (let i = 0; i < cycles; i++) {
      const a = await instance.command(claim, { op: "acquire", body: { generationId: "churn", ttlMs: 60_000 } });
      const token = BigInt((a.body as ClaimResponseWire).claim.fencingToken);
      const r = await instance.command(claim, { op: "release", body: { generationId: "churn", token } });
      if (r.status !== 200) throw new Error(`churn release failed: ${JSON.stringify(r.body)}`);
      version = BigInt((r.body as ClaimResponseWire).claim.version);
    }
    return version;
  });
}

/** Delete any alarm the object scheduled (tests leave no alarms behind). */
export async function clearAlarm(stub: DurableObjectStub<ClaimObject>): Promise<void> {
  await runInDurableObject(stub, (_instance, state) => state.storage.deleteAlarm());
}

const tracked: DurableObjectStub<ClaimObject>[] = [];

/** Remember a claim whose alarm must be cleared after the test (see {@link clearTrackedAlarms}). */
export function track(ns: string, claim: string): void {
  tracked.push(claimStub(ns, claim));
}

/** afterEach hook: delete the alarms of every tracked claim, so no test leaves one behind. */
export async function clearTrackedAlarms(): Promise<void> {
  for (const stub of tracked.splice(0)) await clearAlarm(stub);
}
