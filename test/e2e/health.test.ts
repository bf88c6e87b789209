import { inject, describe, expect, it } from "vitest";

describe("npm start server", () => {
  it("serves /healthz and accepts dev-token", async () => {
    const url = inject("serverUrl");
    expect(await (await fetch(`${url}/healthz`)).json()).toEqual({ ok: true });
    const res = await fetch(`${url}/v1/ns/e2e/claims/none`, { headers: { Authorization: "Bearer dev-token" } });
    expect(res.status).not.toBe(401);
  });
});
