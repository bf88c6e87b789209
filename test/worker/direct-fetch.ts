// Sending many requests to the Worker from one worker-pool test file.
//
// `exports.default.fetch` goes through the pool's runtime hop, and that hop gets slower with
// every request one file has sent: 600 `GET /healthz` in a row took 3.9, 10.1, 23.8, 42.2,
// 71.6 and 129.0 ms per request over each successive hundred (measured 2026-12-02 at
// c34efc2 on the 2-core machine, quiet). Calling the Worker's own `fetch` handler with an
// execution context from `cloudflare:test` — the same module, the same bindings and Durable
// Objects, the same Request object — stayed at 0.03–0.11 ms per request over the same 600.
// The malformed-request fuzzing, which sends thousands, uses this; the other suites (a few
// hundred requests at most, the auth matrix included) keep `exports.default.fetch`, which
// also covers the runtime's own handling of the request.
//
// Guarantees: the request reaches the same Hono app as a deployed request, and the context's
// `waitUntil` work has settled before the answer is returned (so nothing the request started
// outlives the case). Does not: exercise the runtime's HTTP layer (URL dot segments are
// resolved by `new Request`, as the runtime would; nothing else of it is in play here).
import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import worker from "../../src/index.ts";

export async function directFetch(url: string, init?: RequestInit): Promise<Response> {
  const ctx = createExecutionContext();
  const res = await worker.fetch(new Request(url, init), env, ctx);
  await waitOnExecutionContext(ctx);
  return res;
}
