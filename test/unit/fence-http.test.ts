// fenceMiddleware in a Hono app, driven in-process with app.request().
import { Hono } from "hono";
import { describe, expect, expectTypeOf, it } from "vitest";
import { FENCE_HEADER, type FenceVariables, MemoryFence, fenceMiddleware } from "../../src/client/fence/index.ts";

function ledgerApp(): { app: Hono<FenceVariables>; fence: MemoryFence; ledger: string[] } {
  const fence = new MemoryFence();
  const ledger: string[] = [];
  const app = new Hono<FenceVariables>();
  app.post(
    "/ledger",
    fenceMiddleware({ accepted: (key) => fence.accepted(key), allowKey: (key) => key.startsWith("prod/claims/") }),
    async (c) => {
      const { key, token } = c.get("fence");
      expectTypeOf(token).toEqualTypeOf<bigint>();
      const entry = await c.req.text();
      fence.guard(key, token, () => ledger.push(entry));
      return c.body(null, 204);
    },
  );
  return { app, fence, ledger };
}

function post(app: Hono<FenceVariables>, header: string | undefined, entry: string): Promise<Response> {
  return Promise.resolve(
    app.request("/ledger", {
      method: "POST",
      body: entry,
      headers: header === undefined ? {} : { [FENCE_HEADER]: header },
    }),
  );
}

describe("fenceMiddleware", () => {
  it("hands the handler the key and token; equal and higher tokens write", async () => {
    const { app, ledger } = ledgerApp();
    expect((await post(app, "prod/claims/ledger=3", "a")).status).toBe(204);
    expect((await post(app, "prod/claims/ledger=3", "b")).status).toBe(204);
    expect((await post(app, "prod/claims/ledger=4", "c")).status).toBe(204);
    expect(ledger).toEqual(["a", "b", "c"]);
  });

  it("answers 409 fence_rejected naming key, presented and accepted for a lower token", async () => {
    const { app, ledger } = ledgerApp();
    await post(app, "prod/claims/ledger=12", "a");
    const res = await post(app, "prod/claims/ledger=11", "stale");
    expect(res.status).toBe(409);
    expect(await res.json()).toEqual({
      error: {
        code: "fence_rejected",
        message: expect.stringContaining("refused token 11") as string,
        key: "prod/claims/ledger",
        presented: "11",
        accepted: "12",
      },
    });
    expect(ledger).toEqual(["a"]);
  });

  it("answers the same 409 when the handler's own write is refused (a newer owner got in after the header check)", async () => {
    const { fence, ledger } = ledgerApp();
    const slow = new Hono<FenceVariables>();
    slow.post("/ledger", fenceMiddleware({ accepted: (key) => fence.accepted(key) }), (c) => {
      const { key, token } = c.get("fence");
      fence.guard(key, 20n, () => ledger.push("newer owner"));
      fence.guard(key, token, () => ledger.push("late"));
      return c.body(null, 204);
    });
    const res = await post(slow, "prod/claims/ledger=5", "x");
    expect(res.status).toBe(409);
    expect(await res.json()).toMatchObject({ error: { code: "fence_rejected", presented: "5", accepted: "20" } });
    expect(ledger).toEqual(["newer owner"]);
  });

  it("answers 400 invalid_request for a missing, malformed or disallowed header", async () => {
    const { app, ledger } = ledgerApp();
    for (const header of [undefined, "prod/claims/ledger", "prod/claims/ledger=007", "other/claims/x=1"]) {
      const res = await post(app, header, "x");
      expect(res.status).toBe(400);
      expect(await res.json()).toMatchObject({ error: { code: "invalid_request", field: "shiftlock-fence" } });
    }
    expect(ledger).toEqual([]);
  });
});
