/* eslint-disable @typescript-eslint/no-explicit-any -- JSON bodies under test are inspected loosely. */
// Overload (docs/protocol.md#overload): errors the platform marks `overloaded` or `retryable`
// are injected at the Durable Object bindings (a wrapped namespace handed to the router) and
// must answer 503 `overloaded` with Retry-After — per op inside a batch — never 500; an
// overloaded object is called once, a retryable error on a repeatable request twice.
import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { HttpClaimsBackend } from "../../src/client/claims/http-claims-backend.ts";
import { HttpCoordinator } from "../../src/client/coord/coord-http.ts";
import { ManualClock } from "../../src/core/clock.ts";
import { app } from "../../src/http/app.ts";
import { objectName } from "../../src/durable/object-names.ts";
import { WRITE, unique } from "./claims-helpers.ts";
import { uniqueScope } from "./coord-helpers.ts";

interface Injection {
  /** Object names whose stubs fail. */
  names: Set<string>;
  /** The error each failing call throws. */
  error: () => Error;
  /** Calls that fail before the stub works again. */
  failures: number;
  /** Calls made to failing objects' stubs. */
  calls: number;
}

function platformError(flags: { overloaded?: boolean; retryable?: boolean }): () => Error {
  return () => Object.assign(new Error("Durable Object is overloaded. Too many requests queued."), flags);
}

/** `namespace` with the stubs of `injection.names` failing as the platform does. */
function wrap<N extends object>(namespace: N, injection: Injection): N {
  return new Proxy(namespace, {
    get(target, prop) {
      if (prop !== "getByName") return Reflect.get(target, prop) as unknown;
      return (name: string) => {
        const stub = (target as unknown as DurableObjectNamespace).getByName(name);
        if (!injection.names.has(name)) return stub;
        return new Proxy(stub, {
          get(real, method) {
            return (...args: unknown[]) => {
              injection.calls++;
              if (injection.failures > 0) {
                injection.failures--;
                return Promise.reject(injection.error());
              }
              // A direct call: `.apply` on an RPC stub's method would be a remote call of "apply".
              return (real as unknown as Record<PropertyKey, (...a: unknown[]) => unknown>)[method]!(...args);
            };
          },
        });
      };
    },
  });
}

/** One request through the router with the wrapped bindings. */
async function send(
  injection: Injection,
  method: string,
  url: string,
  body?: unknown,
): Promise<{ status: number; body: any; headers: Headers }> {
  const wrapped = { ...env, CLAIMS: wrap(env.CLAIMS, injection), SCOPES: wrap(env.SCOPES, injection) };
  const ctx = createExecutionContext();
  const init: RequestInit = {
    method,
    headers: { Authorization: `Bearer ${WRITE}`, "Content-Type": "application/json" },
  };
  if (body !== undefined) init.body = JSON.stringify(body);
  const res = await app.fetch(new Request(url, init), wrapped, ctx);
  await waitOnExecutionContext(ctx);
  const text = await res.text();
  return { status: res.status, body: text === "" ? undefined : JSON.parse(text), headers: res.headers };
}

function claimInjection(ns: string, claims: string[], overloaded: boolean, failures = 1_000): Injection {
  return {
    names: new Set(claims.map((claim) => objectName(ns, "claim", claim))),
    error: platformError(overloaded ? { overloaded: true, retryable: false } : { retryable: true }),
    failures,
    calls: 0,
  };
}

function expectOverloaded(res: { status: number; body: any; headers: Headers }): void {
  expect(res.status).toBe(503);
  expect(res.body).toMatchObject({ error: { code: "overloaded" } });
  expect(res.headers.get("Retry-After")).toBe("1");
}

describe("platform overload at the object binding", () => {
  it("claims: an overloaded object is 503 overloaded with Retry-After, called once (no retry)", async () => {
    const ns = unique("ns");
    const injection = claimInjection(ns, ["job"], true);
    expectOverloaded(await send(injection, "GET", `http://x/v1/ns/${ns}/claims/job`));
    expect(injection.calls).toBe(1);
    const acquire = await send(injection, "POST", `http://x/v1/ns/${ns}/claims/job/acquire`, {
      generationId: "g1",
      ttlMs: 60_000,
      operationId: "op-1",
    });
    expectOverloaded(acquire);
    expect(injection.calls).toBe(2);
  });

  it("claims: a retryable error is retried once on a repeatable request, never on a bare mutation", async () => {
    const ns = unique("ns");
    const read = claimInjection(ns, ["job"], false, 1);
    expect((await send(read, "GET", `http://x/v1/ns/${ns}/claims/job`)).status).toBe(404);
    expect(read.calls).toBe(2);

    const withId = claimInjection(ns, ["job"], false, 1);
    const acquired = await send(withId, "POST", `http://x/v1/ns/${ns}/claims/job/acquire`, {
      generationId: "g1",
      ttlMs: 60_000,
      operationId: "op-1",
    });
    expect(acquired.status).toBe(200);
    expect(withId.calls).toBe(2);

    const bare = claimInjection(ns, ["job"], false, 1);
    const renew = await send(bare, "POST", `http://x/v1/ns/${ns}/claims/job/renew`, {
      generationId: "g1",
      token: "1",
      ttlMs: 60_000,
    });
    expectOverloaded(renew);
    expect(bare.calls).toBe(1);

    const twice = claimInjection(ns, ["job"], false, 2);
    expectOverloaded(await send(twice, "GET", `http://x/v1/ns/${ns}/claims/job`));
    expect(twice.calls).toBe(2);
    const cleanup = claimInjection(ns, [], false);
    await send(cleanup, "POST", `http://x/v1/ns/${ns}/claims/job/release`, { generationId: "g1", token: "1" });
  });

  it("an object call failing otherwise is 500 internal, with its request line and the cause logged", async () => {
    const ns = unique("ns");
    const injection: Injection = {
      names: new Set([objectName(ns, "claim", "job")]),
      error: () => new Error("out of memory: SQLITE_NOMEM"),
      failures: 1,
      calls: 0,
    };
    const logged: string[] = [];
    const errors: unknown[][] = [];
    const [log, error] = [console.log, console.error];
    console.log = (line: unknown) => void logged.push(String(line));
    console.error = (...args: unknown[]) => void errors.push(args);
    try {
      const res = await send(injection, "GET", `http://x/v1/ns/${ns}/claims/job`);
      expect(res.status).toBe(500);
      expect(res.body).toMatchObject({ error: { code: "internal" } });
    } finally {
      console.log = log;
      console.error = error;
    }
    const line = logged.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l["name"] === "job");
    expect(line).toMatchObject({ namespace: ns, operation: "getClaim", status: 500, outcome: "internal" });
    expect(String(errors[0]?.at(-1))).toContain("SQLITE_NOMEM");
  });

  it("coord: an overloaded scope is 503 overloaded; a publish is never repeated", async () => {
    const scope = uniqueScope();
    const name = objectName(scope.ns, "scope", scope.volumeId, scope.objectStoreId, "");
    const overloaded: Injection = {
      names: new Set([name]),
      error: platformError({ overloaded: true }),
      failures: 9,
      calls: 0,
    };
    expectOverloaded(await send(overloaded, "POST", `${scope.url}/leases`, { participantId: "p", ttlMs: 60_000 }));
    expect(overloaded.calls).toBe(1);

    const none: Injection = { names: new Set(), error: platformError({}), failures: 0, calls: 0 };
    const granted = await send(none, "POST", `${scope.url}/leases`, { participantId: "p", ttlMs: 60_000 });
    expect(granted.status).toBe(201);
    const lease = `${scope.url}/leases/${granted.body.lease.leaseId}`;
    const retryable: Injection = {
      names: new Set([name]),
      error: platformError({ retryable: true }),
      failures: 1,
      calls: 0,
    };
    expectOverloaded(await send(retryable, "POST", `${lease}/publish`, { generation: "1", root: null }));
    expect(retryable.calls).toBe(1);
    retryable.failures = 1;
    retryable.calls = 0;
    expect((await send(retryable, "POST", `${lease}/keepalive`, {})).status).toBe(200);
    expect(retryable.calls).toBe(2);
    expect((await send(none, "DELETE", lease)).status).toBe(204);
  });

  it("batch: an op whose object is overloaded carries 503 overloaded as its result", async () => {
    const ns = unique("ns");
    const injection = claimInjection(ns, ["hot"], true);
    const res = await send(injection, "POST", `http://x/v1/ns/${ns}/batch`, {
      ops: [
        { op: "acquire", claim: "hot", generationId: "g1", ttlMs: 60_000 },
        { op: "acquire", claim: "cool", generationId: "g1", ttlMs: 60_000 },
      ],
    });
    expect(res.status).toBe(200);
    expect(res.body.results[0]).toMatchObject({ status: 503, body: { error: { code: "overloaded" } } });
    expect(res.body.results[1]).toMatchObject({ status: 200, body: { claim: { ownerGeneration: "g1" } } });
    expect(injection.calls).toBe(1);
    const cleanup = claimInjection(ns, [], false);
    await send(cleanup, "POST", `http://x/v1/ns/${ns}/claims/cool/release`, { generationId: "g1", token: "1" });
  });
});

/** A manual clock that tells when someone starts sleeping on it (the client's retry wait). */
class SleepTellingClock extends ManualClock {
  onSleep?: (delayMs: number) => void;
  override sleep(delayMs: number, signal?: AbortSignal): Promise<void> {
    const slept = super.sleep(delayMs, signal);
    this.onSleep?.(delayMs);
    return slept;
  }
}

/** A `fetch` that sends requests through the router with the wrapped bindings. */
function routerFetch(injection: Injection) {
  const wrapped = { ...env, CLAIMS: wrap(env.CLAIMS, injection), SCOPES: wrap(env.SCOPES, injection) };
  return async (url: string, init: RequestInit): Promise<Response> => {
    const ctx = createExecutionContext();
    const res = await app.fetch(new Request(url, init), wrapped, ctx);
    await waitOnExecutionContext(ctx);
    return res;
  };
}

describe("the client against an overloaded object (docs/protocol.md#client-retries)", () => {
  it("retries an overloaded read after Retry-After and returns its answer", async () => {
    const ns = unique("ns");
    const injection = claimInjection(ns, ["job"], true, 1);
    const clock = new SleepTellingClock(Date.now());
    const client = new HttpClaimsBackend({
      baseUrl: "http://x",
      token: WRITE,
      namespace: ns,
      clock,
      fetch: routerFetch(injection),
    });
    const waiting = new Promise<number>((resolve) => (clock.onSleep = resolve));
    const pending = client.getClaim("job").catch((e: unknown) => e);
    const delayMs = await waiting;
    expect(injection.calls).toBe(1);
    expect(delayMs).toBeGreaterThanOrEqual(1_000); // not before Retry-After: 1
    await clock.advance(delayMs);
    // Never acquired: the read's real answer, from the second attempt.
    expect(await pending).toMatchObject({ code: "claim_not_found" });
    expect(injection.calls).toBe(2);
    await client.close();
  });

  it("does not repeat a publish the overloaded object refused", async () => {
    const scope = uniqueScope();
    const name = objectName(scope.ns, "scope", scope.volumeId, scope.objectStoreId, "");
    const injection: Injection = {
      names: new Set([name]),
      error: platformError({ overloaded: true }),
      failures: 0,
      calls: 0,
    };
    const coord = new HttpCoordinator({
      baseUrl: "http://x",
      token: WRITE,
      namespace: scope.ns,
      fetch: routerFetch(injection),
    });
    const { lease } = await coord.tryAcquireWriteLease({
      volumeId: scope.volumeId,
      objectStoreId: scope.objectStoreId,
      participantId: "p",
    });
    expect(lease).toBeDefined();
    injection.failures = 10;
    const before = injection.calls;
    await expect(lease!.publish({ root: { v: 1 } })).rejects.toMatchObject({ code: "overloaded" });
    expect(injection.calls - before).toBe(1);
    injection.failures = 0;
    await lease!.release();
  });
});
