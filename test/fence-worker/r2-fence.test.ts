// fencedPut on Miniflare's R2: per object, a lower token never overwrites a higher one, and
// interleaving writers lose no accepted write.
import { describe, expect, it } from "vitest";
import { FenceRejected, R2_FENCE_TOKEN_META, fencedPut } from "../../src/client/fence/index.ts";
import { fenceEnv, uniqueKey } from "./env.ts";

const bucket = fenceEnv.BUCKET;

describe("fencedPut (R2)", () => {
  it("writes absent objects, accepts equal and higher tokens, refuses a lower one and writes nothing", async () => {
    const key = uniqueKey("r2");
    const object = `obj-${crypto.randomUUID()}`;
    const first = await fencedPut(bucket, object, "v1", { fence: { key, token: 4n }, customMetadata: { mine: "yes" } });
    expect(first.customMetadata).toMatchObject({ mine: "yes", [R2_FENCE_TOKEN_META]: "00000000000000000004" });
    await fencedPut(bucket, object, new TextEncoder().encode("v2"), { fence: { key, token: "4" } });
    const refused = await fencedPut(bucket, object, "stale", { fence: { key, token: 3n } }).catch((e: unknown) => e);
    expect(refused).toMatchObject({ name: "FenceRejected", key, presented: 3n, accepted: 4n });
    await fencedPut(bucket, object, new Blob(["v3"]), { fence: { key, token: 12n } });
    await expect(fencedPut(bucket, object, "v-late", { fence: { key, token: 11n } })).rejects.toThrow(FenceRejected);
    expect(await (await bucket.get(object))?.text()).toBe("v3");
  });

  it("guards per object and per fence key", async () => {
    const key = uniqueKey("r2-scope");
    const [a, b] = [`a-${crypto.randomUUID()}`, `b-${crypto.randomUUID()}`];
    await fencedPut(bucket, a, "a9", { fence: { key, token: 9n } });
    // b has never been written under this fence: a lower token still writes it.
    await fencedPut(bucket, b, "b2", { fence: { key, token: 2n } });
    // Another fence key is another fence.
    await fencedPut(bucket, a, "other", { fence: { key: `${key}-other`, token: 1n } });
    expect(await (await bucket.get(b))?.text()).toBe("b2");
    expect(await (await bucket.get(a))?.text()).toBe("other");
  });

  it("refuses a one-shot stream body before writing", async () => {
    const stream = new Blob(["x"]).stream();
    await expect(
      fencedPut(bucket, `s-${crypto.randomUUID()}`, stream as unknown as string, { fence: { key: "k", token: 1n } }),
    ).rejects.toThrow(/re-readable/);
  });

  it("with interleaving writers, the highest accepted token's last write is what remains", async () => {
    const key = uniqueKey("r2-race");
    const object = `race-${crypto.randomUUID()}`;
    // 12 writers, each with its own token, each writing 5 times; all interleave.
    const writers = Array.from({ length: 12 }, (_, w) => BigInt((w * 5) % 13) + 1n);
    const accepted: { token: bigint; body: string; completed: number }[] = [];
    let clock = 0;
    await Promise.all(
      writers.map(async (token) => {
        for (let i = 0; i < 5; i++) {
          const body = `t${token}-${i}`;
          try {
            await fencedPut(bucket, object, body, { fence: { key, token }, attempts: 1_000 });
            accepted.push({ token, body, completed: clock++ });
          } catch (err) {
            expect(err).toBeInstanceOf(FenceRejected);
          }
        }
      }),
    );
    // No accepted write carries a lower token than one accepted before it (completion order),
    // and the object holds the last accepted write: none was overwritten unseen.
    const order = accepted.map((a) => a.token);
    expect(order).toEqual([...order].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)));
    const top = accepted.at(-1)!;
    const stored = await bucket.get(object);
    expect(await stored?.text()).toBe(top.body);
    expect(stored?.customMetadata?.[R2_FENCE_TOKEN_META]).toBe(top.token.toString().padStart(20, "0"));
  });
});
