/**
 * HttpClaimsBackend over a fake `fetch`: what goes on the wire (paths, encoding, auth,
 * counters as strings) and how answers come back (records as bigint, errors as the one
 * ShiftlockError class, network failures, cancellation).
 */
import { describe, expect, it } from "vitest";
import { HttpClaimsBackend } from "../../src/client/claims/http-claims-backend.ts";
import { isNetworkError, type FetchLike } from "../../src/client/transport/http-transport.ts";
import { claimToWire, type ClaimRecord } from "../../src/protocol/claims.ts";
import { ShiftlockError, errorEnvelope } from "../../src/protocol/errors.ts";
import { ManualClock, flushMicrotasks } from "../../src/core/clock.ts";

interface Call {
  url: string;
  method: string;
  headers: Record<string, string>;
  body: string | undefined;
}

const record: ClaimRecord = {
  name: "a/b c",
  ownerGeneration: "g1",
  fencingToken: 18_446_744_073_709_551_614n, // 2^64 - 2: beyond Number precision
  phase: "owned",
  acquiredAtMs: 1_000,
  expiresAtMs: 16_000,
  previousOwner: "",
  pendingSuccessor: "",
  drainStatus: "",
  transferStatus: "",
  lastHeartbeatMs: 1_000,
  reason: "acquired",
  version: 9_007_199_254_740_993n, // 2^53 + 1
  bound: false,
  leaseEpoch: 0n,
};

function json(status: number, body: unknown, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), { status, headers: { "Content-Type": "application/json", ...headers } });
}

/** A backend whose fetch records each call and answers with `answer`. */
function backendWith(
  answer: (call: Call) => Response | Promise<Response>,
  namespace = "team/x",
  retry: { retryForMs?: number; clock?: ManualClock } = { retryForMs: 0 },
) {
  const calls: Call[] = [];
  const fetch: FetchLike = async (input, init) => {
    const call: Call = {
      url: input,
      method: init.method ?? "GET",
      headers: init.headers as Record<string, string>,
      body: init.body as string | undefined,
    };
    calls.push(call);
    init.signal?.throwIfAborted();
    return answer(call);
  };
  const backend = new HttpClaimsBackend({
    baseUrl: "https://locks.example/",
    token: "s3cret",
    namespace,
    fetch,
    ...retry,
  });
  return { backend, calls };
}

describe("HttpClaimsBackend requests", () => {
  it("percent-encodes names, sends the bearer token and counters as decimal strings", async () => {
    const { backend, calls } = backendWith(() => json(200, { claim: claimToWire(record) }));
    await backend.renewClaim({
      claimName: "a/b c",
      generationId: "g1",
      token: 18_446_744_073_709_551_614n,
      ttlMs: 15_000,
      operationId: "op-1",
    });
    expect(calls).toHaveLength(1);
    const call = calls[0]!;
    expect(call.url).toBe("https://locks.example/v1/ns/team%2Fx/claims/a%2Fb%20c/renew");
    expect(call.method).toBe("POST");
    expect(call.headers["Authorization"]).toBe("Bearer s3cret");
    expect(call.headers["Content-Type"]).toBe("application/json");
    expect(call.body).toBe('{"generationId":"g1","token":"18446744073709551614","ttlMs":15000,"operationId":"op-1"}');
  });

  it("routes every method to its the protocol path and leaves out absent optional fields", async () => {
    const generation = {
      id: "g",
      service: "s",
      instanceId: "i",
      state: "standby",
      startedAtMs: 1,
      updatedAtMs: 2,
      reason: "",
    };
    const { backend, calls } = backendWith((call) =>
      call.url.includes("/generations") ? json(200, { generation }) : json(200, { claim: claimToWire(record) }),
    );
    const t = { claimName: "c", fromGeneration: "a", toGeneration: "b" };
    await backend.acquireClaim({ claimName: "c", generationId: "a", ttlMs: 100 });
    await backend.prepareTransfer({ ...t, token: 1n, ttlMs: 100 });
    await backend.commitTransfer({ ...t, expectedToken: 1n, ttlMs: 100 });
    await backend.abortTransfer({ ...t, expectedToken: 1n });
    await backend.releaseClaim({ claimName: "c", generationId: "a", token: 0n });
    await backend.getClaim("c");
    await backend.registerGeneration({ id: "g", service: "s", instanceId: "i" });
    await backend.updateGeneration({ id: "g/1", state: "standby" });
    await backend.getGeneration("g");
    expect(calls.map((c) => `${c.method} ${c.url.replace("https://locks.example/v1/ns/team%2Fx", "")}`)).toEqual([
      "POST /claims/c/acquire",
      "POST /claims/c/transfer/prepare",
      "POST /claims/c/transfer/commit",
      "POST /claims/c/transfer/abort",
      "POST /claims/c/release",
      "GET /claims/c",
      "POST /generations",
      "PATCH /generations/g%2F1",
      "GET /generations/g",
    ]);
    expect(calls[0]!.body).toBe('{"generationId":"a","ttlMs":100}');
    expect(calls[4]!.body).toBe('{"generationId":"a","token":"0"}');
    expect(calls[5]!.body).toBeUndefined();
    expect(calls[5]!.headers["Content-Type"]).toBeUndefined();
    expect(calls[7]!.body).toBe('{"state":"standby"}');
  });
});

describe("HttpClaimsBackend answers", () => {
  it("decodes counters to bigint without losing precision", async () => {
    const { backend } = backendWith(() => json(200, { claim: claimToWire(record) }));
    expect(await backend.getClaim("a/b c")).toEqual(record);
  });

  it("rebuilds refusals as ShiftlockError with the server's code, status and details", async () => {
    const { backend } = backendWith(() =>
      json(409, errorEnvelope("claim_held", "held by g1", { claim: claimToWire(record) })),
    );
    const err = await backend.acquireClaim({ claimName: "c", generationId: "g2", ttlMs: 100 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ShiftlockError);
    const e = err as ShiftlockError;
    expect([e.code, e.status, e.message]).toEqual(["claim_held", 409, "held by g1"]);
    expect(e.details["claim"]).toEqual(record); // decoded, bigint counters
  });

  it("keeps invalid_request's field and Retry-After of rate_limited", async () => {
    const answers = [
      json(400, errorEnvelope("invalid_request", "ttlMs: too small", { field: "ttlMs" })),
      json(429, errorEnvelope("rate_limited"), { "Retry-After": "2" }),
    ];
    const { backend } = backendWith(() => answers.shift()!);
    const bad = (await backend.getClaim("c").catch((e: unknown) => e)) as ShiftlockError;
    expect([bad.code, bad.details["field"]]).toEqual(["invalid_request", "ttlMs"]);
    const limited = (await backend.getClaim("c").catch((e: unknown) => e)) as ShiftlockError;
    expect([limited.code, limited.details["retryAfterMs"]]).toEqual(["rate_limited", 2_000]);
  });

  it("maps a non-envelope answer (a proxy's 502 page) to internal, keeping the status", async () => {
    const { backend } = backendWith(() => new Response("<html>Bad Gateway</html>", { status: 502 }));
    const err = (await backend.getClaim("c").catch((e: unknown) => e)) as ShiftlockError;
    expect(err.code).toBe("internal");
    expect(err.details["status"]).toBe(502);
  });

  it("rejects a malformed success body with internal instead of returning garbage", async () => {
    const { backend } = backendWith(() => json(200, { claim: { ...claimToWire(record), fencingToken: 5 } }));
    const err = (await backend.getClaim("c").catch((e: unknown) => e)) as ShiftlockError;
    expect(err.code).toBe("internal");
  });

  it("turns a network failure into internal with details.network and the cause", async () => {
    const cause = new TypeError("fetch failed");
    const { backend } = backendWith(() => Promise.reject(cause));
    const err = await backend.getClaim("c").catch((e: unknown) => e);
    expect(isNetworkError(err)).toBe(true);
    expect((err as ShiftlockError).cause).toBe(cause);
  });
});

describe("HttpClaimsBackend retries (the one retry rule, docs/protocol.md#client-retries)", () => {
  const overloaded = () =>
    json(503, errorEnvelope("overloaded", "busy", { retryAfterMs: 1_000 }), { "Retry-After": "2" });

  it("retries an overloaded read, not before Retry-After, and returns its answer", async () => {
    const clock = new ManualClock(0);
    const answers = [overloaded(), json(200, { claim: claimToWire(record) })];
    const { backend, calls } = backendWith(() => answers.shift()!, "team/x", { clock });
    const pending = backend.getClaim("c");
    await flushMicrotasks();
    expect(calls).toHaveLength(1);
    await clock.advance(1_999);
    expect(calls).toHaveLength(1);
    await clock.advance(1);
    expect((await pending)?.fencingToken).toBe(record.fencingToken);
    expect(calls).toHaveLength(2);
  });

  it("repeats a mutation only with an operationId; gives up at retryForMs", async () => {
    const clock = new ManualClock(0);
    const { backend, calls } = backendWith(overloaded, "team/x", { clock, retryForMs: 5_000 });
    const bare = backend.renewClaim({ claimName: "c", generationId: "g", token: 1n, ttlMs: 1_000 });
    await expect(bare).rejects.toMatchObject({ code: "overloaded" });
    expect(calls).toHaveLength(1);
    const withId = backend.renewClaim({ claimName: "c", generationId: "g", token: 1n, ttlMs: 1_000, operationId: "o" });
    const settled = withId.catch((e: unknown) => e);
    for (let i = 0; i < 10; i++) {
      await flushMicrotasks();
      await clock.advance(2_000);
    }
    expect(await settled).toMatchObject({ code: "overloaded" });
    // Sent at 0, 2 s and 4 s; a Retry-After of 2 s from 4 s would pass the 5 s budget.
    expect(calls).toHaveLength(4);
  });
});

describe("HttpClaimsBackend cancellation and lifecycle", () => {
  it("an aborted signal rejects with its reason, before or during the request", async () => {
    const { backend, calls } = backendWith(() => json(200, { claim: claimToWire(record) }));
    const before = new AbortController();
    const reason = new Error("gone");
    before.abort(reason);
    await expect(backend.getClaim("c", { signal: before.signal })).rejects.toBe(reason);
    expect(calls).toHaveLength(0);

    // During: a fetch that honours the signal rejects; the client surfaces the reason, not a network error.
    const during = new AbortController();
    const { backend: slow } = backendWith(
      () =>
        new Promise<Response>((_, reject) => {
          during.signal.addEventListener("abort", () => reject(new DOMException("aborted", "AbortError")));
        }),
    );
    const pending = slow.getClaim("c", { signal: during.signal });
    const why = new Error("timeout");
    during.abort(why);
    await expect(pending).rejects.toBe(why);
  });

  it("after close() every call is refused", async () => {
    const { backend, calls } = backendWith(() => json(200, { claim: claimToWire(record) }));
    await backend.close();
    const err = (await backend.getClaim("c").catch((e: unknown) => e)) as ShiftlockError;
    expect(err.code).toBe("invalid_request");
    expect(() => backend.watchClaim("c")).toThrow(ShiftlockError);
    expect(calls).toHaveLength(0);
  });
});

describe("HttpClaimsBackend batch", () => {
  it("is one request to the batch route; a locally refused op is its outcome and is not sent", async () => {
    const { backend, calls } = backendWith(() =>
      json(200, {
        results: [{ status: 200, body: { claim: claimToWire(record) } }, errorAnswerBody(409, "stale_token")],
      }),
    );
    const outcomes = await backend.batch([
      {
        op: "prepare",
        claimName: "a/b c",
        fromGeneration: "g1",
        toGeneration: "g2",
        token: 18_446_744_073_709_551_614n,
        ttlMs: 30_000,
        operationId: "p-1",
      },
      { op: "acquire", claimName: "short", generationId: "g1", ttlMs: 5 },
      { op: "release", claimName: "r", generationId: "g1", token: 3n },
    ]);
    expect(calls).toHaveLength(1);
    expect(calls[0]!.url).toBe("https://locks.example/v1/ns/team%2Fx/batch");
    expect(JSON.parse(calls[0]!.body!)).toEqual({
      ops: [
        {
          op: "prepare",
          claim: "a/b c",
          fromGeneration: "g1",
          toGeneration: "g2",
          token: "18446744073709551614",
          ttlMs: 30_000,
          operationId: "p-1",
        },
        { op: "release", claim: "r", generationId: "g1", token: "3" },
      ],
    });
    expect(outcomes[0]).toEqual({ ok: true, claim: record });
    expect(outcomes[1]).toMatchObject({ ok: false, error: { code: "invalid_request", details: { field: "ttlMs" } } });
    expect(outcomes[2]).toMatchObject({ ok: false, error: { code: "stale_token" } });
    expect(outcomes[2]!.ok === false && outcomes[2]!.error).toBeInstanceOf(ShiftlockError);
  });

  it("refuses a malformed batch before sending and a result list of the wrong length after", async () => {
    const { backend, calls } = backendWith(() => json(200, { results: [] }));
    const op = { op: "acquire", claimName: "c", generationId: "g", ttlMs: 1_000 } as const;
    await expect(backend.batch([op, op])).rejects.toMatchObject({
      code: "invalid_request",
      details: { field: "ops.1.claim" },
    });
    await expect(backend.batch([])).rejects.toMatchObject({ code: "invalid_request" });
    expect(calls).toHaveLength(0);
    await expect(backend.batch([op])).rejects.toMatchObject({ code: "internal" });
    expect(calls).toHaveLength(1);
  });
});

/** One op's failed result as the server renders it. */
function errorAnswerBody(status: number, code: Parameters<typeof errorEnvelope>[0]): { status: number; body: unknown } {
  return { status, body: errorEnvelope(code) };
}
