/* eslint-disable @typescript-eslint/no-explicit-any -- JSON bodies under test are inspected loosely. */
// Shared helpers for the coord worker tests: authenticated requests against the Worker entry,
// unique scopes, direct access to a scope's object, a controllable clock, and a watch
// collector.
import { testEnv } from "./test-env.ts";
import { runInDurableObject } from "cloudflare:test";
import type { ScopeObject } from "./test-entry.ts";
import { type Watch, openWatchSocket, routerCall } from "./router-client.ts";
import { objectName } from "../../src/durable/object-names.ts";
import type { Clock } from "../../src/core/clock.ts";

export const WRITE = "test-write-all";
export const READ = "test-read-all";

export interface TestScope {
  ns: string;
  volumeId: string;
  objectStoreId: string;
  key: string;
  /** `http://x/v1/ns/{ns}/volumes/{volumeId}/…` of this scope. */
  url: string;
}

/** A fresh object-store scope (or keyed, with `key`) per test, so tests never share objects. */
export function uniqueScope(options: { key?: string; store?: boolean } = {}): TestScope {
  const ns = `ns-${crypto.randomUUID()}`;
  const volumeId = `vol-${crypto.randomUUID()}`;
  const objectStoreId = options.store === false ? "" : `store-${crypto.randomUUID()}`;
  const key = options.key ?? "";
  let url = `http://x/v1/ns/${encodeURIComponent(ns)}/volumes/${encodeURIComponent(volumeId)}`;
  if (objectStoreId !== "") url += `/stores/${encodeURIComponent(objectStoreId)}`;
  if (key !== "") url += `/keys/${encodeURIComponent(key)}`;
  return { ns, volumeId, objectStoreId, key, url };
}

export function scopeStub(scope: TestScope): DurableObjectStub<ScopeObject> {
  return testEnv.SCOPES.getByName(objectName(scope.ns, "scope", scope.volumeId, scope.objectStoreId, scope.key));
}

export function call(method: string, url: string, body?: unknown, token: string = WRITE, signal?: AbortSignal) {
  return routerCall(method, url, body, token, signal);
}

export const post = (url: string, body?: unknown, token?: string) => call("POST", url, body, token);
export const get = (url: string, token?: string) => call("GET", url, undefined, token);
export const del = (url: string, token?: string) => call("DELETE", url, undefined, token);

/** Acquire (try) and return the lease body, failing the test on anything but 201. */
export async function acquire(scope: TestScope, participantId = "writer", extra: object = {}): Promise<any> {
  const res = await post(`${scope.url}/leases`, { participantId, ...extra });
  if (res.status !== 201) throw new Error(`acquire: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.lease;
}

/** A clock the test moves by hand; installed into the scope's object instance. */
export class TestClock implements Clock {
  constructor(public now: number) {}
  nowMs(): number {
    return this.now;
  }
  sleep(): Promise<void> {
    return Promise.reject(new Error("TestClock does not sleep"));
  }
}

/** Install a manual clock into the scope's object (lives as long as the instance). */
export async function installClock(scope: TestScope, startMs = Date.UTC(2030, 0, 1)): Promise<TestClock> {
  const clock = new TestClock(startMs);
  await runInDurableObject(scopeStub(scope), (instance: ScopeObject) => {
    instance.hooks.clock = clock;
  });
  return clock;
}

/** Open a watch socket through the router and collect its messages. */
export function openWatch(scope: TestScope, query = "", token = READ): Promise<Watch> {
  return openWatchSocket(`${scope.url}/watch${query}`, token);
}
