// `Fence` in a user's own Durable Object: compare, fence update and the caller's writes in one
// transactionSync.
import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { Fence, FenceRejected } from "../../src/client/fence/index.ts";
import { fenceEnv, uniqueKey } from "./env.ts";
import type { FencedLedger } from "./worker.ts";

function ledger(key: string): DurableObjectStub<FencedLedger> {
  return fenceEnv.LEDGER.getByName(key);
}

describe("Fence (Durable Object)", () => {
  it("accepts equal and higher tokens, refuses a lower one and writes nothing for it", async () => {
    const key = uniqueKey("do");
    const stub = ledger(key);
    expect(await stub.append(key, "5", "a")).toEqual({ ok: true });
    expect(await stub.append(key, "5", "b")).toEqual({ ok: true });
    expect(await stub.append(key, "4", "stale")).toEqual({ ok: false, accepted: "5" });
    expect(await stub.append(key, "18446744073709551615", "max")).toEqual({ ok: true });
    expect(await stub.append(key, "9", "late")).toEqual({ ok: false, accepted: "18446744073709551615" });
    expect((await stub.entries()).map((e) => e.entry)).toEqual(["a", "b", "max"]);
  });

  it("throws FenceRejected naming key, presented and accepted; a throwing write rolls the fence back", async () => {
    const key = uniqueKey("do-direct");
    await runInDurableObject(ledger(key), (object, state) => {
      const instance = object as FencedLedger;
      const fence = new Fence(state.storage);
      fence.guard(key, 7n, () => undefined);
      let refused: unknown;
      try {
        fence.guard(key, 6n, () =>
          state.storage.sql.exec("INSERT INTO ledger (key, token, entry) VALUES ('k','6','x')"),
        );
      } catch (err) {
        refused = err;
      }
      expect(refused).toBeInstanceOf(FenceRejected);
      expect(refused).toMatchObject({ key, presented: 6n, accepted: 7n, code: "fence_rejected" });
      expect(() =>
        fence.guard(key, 9n, () => {
          state.storage.sql.exec("INSERT INTO ledger (key, token, entry) VALUES ('k','9','y')");
          throw new Error("write failed");
        }),
      ).toThrow("write failed");
      expect(fence.accepted(key)).toBe(7n);
      expect(instance.entries()).toEqual([]);
      expect(() => fence.guard(key, "07", () => undefined)).toThrow(TypeError);
    });
  });

  it("under concurrent writers with shuffled tokens, accepted tokens never go down", async () => {
    const key = uniqueKey("do-race");
    const stub = ledger(key);
    const tokens = Array.from({ length: 60 }, (_, i) => String((i * 37) % 61));
    const results = await Promise.all(tokens.map((t) => stub.append(key, t, `e${t}`)));
    const entries = await stub.entries();
    expect(entries.length).toBe(results.filter((r) => r.ok).length);
    const accepted = entries.map((e) => BigInt(e.token));
    expect(accepted).toEqual([...accepted].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)));
  });
});
