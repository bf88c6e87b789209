/**
 * The client's one retry rule (src/client/transport/retry-policy.ts,
 * docs/protocol.md#client-retries) on a manual clock with pinned jitter: which failures and
 * which requests are retried, the waits between attempts (backoff, never before
 * Retry-After), and where attempts stop (deadline, signal). No real time passes.
 */
import { describe, expect, it } from "vitest";
import { HttpTransport, type FetchLike } from "../../src/client/transport/http-transport.ts";
import { isRetryable, mayRetry, retrying } from "../../src/client/transport/retry-policy.ts";
import { ManualClock, flushMicrotasks } from "../../src/core/clock.ts";
import { acquireClaim, claimBatch, getClaim } from "../../src/protocol/claim-routes.ts";
import { ShiftlockError, errorEnvelope } from "../../src/protocol/errors.ts";
import { SCOPE_ROUTE_FAMILIES } from "../../src/protocol/scope-routes.ts";

const network = () => new ShiftlockError("internal", "network error", { network: true });
const overloaded = (retryAfterMs?: number) =>
  new ShiftlockError("overloaded", "busy", retryAfterMs === undefined ? {} : { retryAfterMs });

/** Run `retrying` on a manual clock, recording when each attempt started. */
async function run(failures: Error[], options: { untilMs: number; signal?: AbortSignal }) {
  const clock = new ManualClock(0);
  const startedAt: number[] = [];
  const result = retrying({ clock, random: () => 0, ...options }, () => {
    startedAt.push(clock.nowMs());
    const failure = failures.shift();
    return failure === undefined ? Promise.resolve("ok") : Promise.reject(failure);
  }).catch((e: unknown) => e);
  for (let i = 0; i < 50; i++) {
    await flushMicrotasks();
    await clock.advance(25);
  }
  return { outcome: await result, startedAt };
}

describe("which failures are retried", () => {
  it("network failures, overloaded and rate_limited; never an answer, internal or a cancellation", () => {
    expect(isRetryable(network())).toBe(true);
    expect(isRetryable(overloaded())).toBe(true);
    expect(isRetryable(new ShiftlockError("rate_limited"))).toBe(true);
    expect(isRetryable(new TypeError("fetch failed"))).toBe(true);
    for (const code of ["internal", "claim_held", "lease_lost", "invalid_request", "unauthorized"] as const) {
      expect(isRetryable(new ShiftlockError(code)), code).toBe(false);
    }
    expect(isRetryable(new DOMException("aborted", "AbortError"))).toBe(false);
  });
});

describe("which requests are retried (the route declarations)", () => {
  const { publish, acquire, keepalive, release, snapshot } = SCOPE_ROUTE_FAMILIES.store;
  it("reads, keepalive and release always; claim mutations with an operationId; publish and lease requests never", () => {
    const err = overloaded();
    expect(mayRetry(getClaim, undefined, err)).toBe(true);
    expect(mayRetry(snapshot, undefined, err)).toBe(true);
    expect(mayRetry(keepalive, {}, err)).toBe(true);
    expect(mayRetry(release, undefined, err)).toBe(true);
    expect(mayRetry(acquireClaim, { generationId: "g", ttlMs: 1_000 }, err)).toBe(false);
    expect(mayRetry(acquireClaim, { generationId: "g", ttlMs: 1_000, operationId: "o" }, err)).toBe(true);
    expect(mayRetry(claimBatch, { ops: [{ operationId: "a" }, { operationId: "b" }] }, err)).toBe(true);
    expect(mayRetry(claimBatch, { ops: [{ operationId: "a" }, {}] }, err)).toBe(false);
    expect(mayRetry(publish, { generation: "2" }, err)).toBe(false);
    expect(mayRetry(acquire, { participantId: "p", waiterId: "w" }, err)).toBe(false);
    expect(mayRetry(getClaim, undefined, new ShiftlockError("internal"))).toBe(false);
  });
});

describe("when and until when", () => {
  it("waits through the jittered backoff between attempts", async () => {
    const { outcome, startedAt } = await run([network(), network(), network()], { untilMs: 10_000 });
    expect(outcome).toBe("ok");
    // random() = 0: half of each ceiling (50, 100, 200 ms).
    expect(startedAt).toEqual([0, 25, 75, 175]);
  });

  it("never retries before Retry-After", async () => {
    const { outcome, startedAt } = await run([overloaded(300)], { untilMs: 10_000 });
    expect(outcome).toBe("ok");
    expect(startedAt).toEqual([0, 300]);
  });

  it("stops at the deadline, and does not wait past it for a Retry-After", async () => {
    const late = await run([network(), network(), network(), network(), network()], { untilMs: 100 });
    expect(late.outcome).toMatchObject({ details: { network: true } });
    expect(late.startedAt).toEqual([0, 25, 75, 100]);
    const far = await run([overloaded(5_000)], { untilMs: 1_000 });
    expect(far.outcome).toMatchObject({ code: "overloaded" });
    expect(far.startedAt).toEqual([0]);
  });

  it("stops when the signal aborts, with its reason", async () => {
    const stop = new AbortController();
    const reason = new Error("stopped");
    stop.abort(reason);
    const { outcome, startedAt } = await run([network()], { untilMs: 10_000, signal: stop.signal });
    expect(outcome).toBe(reason);
    expect(startedAt).toEqual([]);
  });
});

describe("the transport decides from the declaration", () => {
  function transportWith(status: number) {
    const sent: string[] = [];
    const fetch: FetchLike = (url, init) => {
      sent.push(`${init.method} ${url}`);
      return Promise.resolve(new Response(JSON.stringify(errorEnvelope("overloaded")), { status }));
    };
    const clock = new ManualClock(0);
    const transport = new HttpTransport({ baseUrl: "https://svc", token: "t", namespace: "n", fetch, clock });
    return { transport, sent, clock };
  }
  const params = { volumeId: "v", objectStoreId: "s", leaseId: "l" };

  it("retries an overloaded keepalive, never an overloaded publish", async () => {
    const { transport, sent, clock } = transportWith(503);
    const { publish, keepalive } = SCOPE_ROUTE_FAMILIES.store;
    await expect(transport.call(publish, { params, body: { generation: 2n } })).rejects.toMatchObject({
      code: "overloaded",
    });
    expect(sent).toHaveLength(1);
    const pending = transport.call(keepalive, { params, body: {} }).catch((e: unknown) => e);
    for (let i = 0; i < 20; i++) {
      await flushMicrotasks();
      await clock.advance(1_000);
    }
    expect(await pending).toMatchObject({ code: "overloaded" });
    expect(sent.length).toBeGreaterThan(2);
    expect(new Set(sent.slice(1)).size).toBe(1);
  });
});
