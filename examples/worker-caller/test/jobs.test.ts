// POST /jobs/<claim> against the real shiftlock Worker (an auxiliary worker, see
// vitest.config.ts): the job watches, acquires and releases the claim through the service
// binding, and a second job gets the next fencing token.
import { exports } from "cloudflare:workers";
import { expect, it } from "vitest";

it("takes, watches and releases a claim through the shiftlock binding", async () => {
  const claim = `job-${crypto.randomUUID()}`;
  for (const fencingToken of ["1", "2"]) {
    const res = await exports.default.fetch(`http://caller.example/jobs/${claim}`, { method: "POST" });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ claim, fencingToken, events: ["acquired", "released"] });
  }
});
