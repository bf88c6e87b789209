import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";

describe("health and routing", () => {
  it("serves /healthz without auth", async () => {
    const res = await exports.default.fetch("http://x/healthz");
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ ok: true });
  });

  it("answers unknown routes with the not_found envelope", async () => {
    const res = await exports.default.fetch("http://x/nope");
    expect(res.status).toBe(404);
    expect(await res.json()).toMatchObject({ error: { code: "not_found" } });
  });

  it("authenticates every /v1 route before anything else", async () => {
    const res = await exports.default.fetch("http://x/v1/ns/a/volumes/v/stores/s/leases/l", { method: "DELETE" });
    expect(res.status).toBe(401);
    expect(await res.json()).toMatchObject({ error: { code: "unauthorized" } });
  });
});
