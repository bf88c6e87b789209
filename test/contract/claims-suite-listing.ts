/**
 * Listing in the claims contract (docs/protocol.md#listing): `listClaims` and `listGenerations` yield every
 * record in UTF-8 byte order, following cursors across pages, with the same filters and the
 * same refusals on every backend. Over HTTP the index may lag by up to 2 s: `eventually`
 * polls for at most that long, which is the guarantee under test, not a stand-in for sync.
 */
import { describe, expect, it } from "vitest";
import type { ClaimsBackend } from "../../src/client/claims/claims-backend.ts";
import { compareUtf8 } from "../../src/core/listing-cursor.ts";
import { expectCode, MINUTE, type FixtureTest } from "./claims-suite-helpers.ts";

/** Collect an async iterable. */
async function all<T>(items: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of items) out.push(item);
  return out;
}

/** Retry `check` until it passes or the 2 s lag bound (plus a little slack) is over. */
async function eventually(check: () => Promise<void>): Promise<void> {
  const deadline = Date.now() + 2_500;
  for (;;) {
    try {
      await check();
      return;
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}

async function names(backend: ClaimsBackend, filter: Parameters<ClaimsBackend["listClaims"]>[0], limit?: number) {
  return (await all(backend.listClaims(filter, { limit }))).map((c) => c.name);
}

export function runListingChecks(withFixture: (body: FixtureTest) => () => Promise<void>): void {
  describe("listing (docs/protocol.md#listing)", () => {
    it(
      "listClaims follows cursors across pages, in UTF-8 byte order, with prefix, phase and owner filters",
      withFixture(async ({ backend }) => {
        const claimNames = ["b-2", "a-1", "\u{1F600}", "\uFF5A", "b-1", "a-2", "c"];
        for (const [i, claimName] of claimNames.entries()) {
          await backend.acquireClaim({ claimName, generationId: i % 2 === 0 ? "even" : "odd", ttlMs: MINUTE });
        }
        const released = await backend.acquireClaim({ claimName: "free", generationId: "even", ttlMs: MINUTE });
        await backend.releaseClaim({ claimName: "free", generationId: "even", token: released.fencingToken });
        const expected = [...claimNames, "free"].sort(compareUtf8);
        await eventually(async () => {
          expect(await names(backend, {}, 3)).toEqual(expected);
          expect(await names(backend, { phase: "unowned" })).toEqual(["free"]);
        });
        expect(await names(backend, {}, 1)).toEqual(expected);
        expect(await names(backend, { prefix: "b-" }, 1)).toEqual(["b-1", "b-2"]);
        expect(await names(backend, { owner: "odd", phase: "owned" }, 2)).toEqual(["a-1", "a-2", "\uFF5A"]);
        const first = (await all(backend.listClaims({ prefix: "a-1" })))[0];
        expect(first).toMatchObject({ name: "a-1", ownerGeneration: "odd", fencingToken: 1n, phase: "owned" });
      }),
    );

    it(
      "listGenerations filters by service and state; a bad limit is invalid_request",
      withFixture(async ({ backend }) => {
        for (const [id, service] of [
          ["g2", "api"],
          ["g1", "api"],
          ["g3", "web"],
        ] as const) {
          await backend.registerGeneration({ id, service, instanceId: "i" });
        }
        await backend.updateGeneration({ id: "g2", state: "standby" });
        // Over HTTP each generation reaches the index on its own (up to 2 s behind): wait
        // until all three changes are there, then judge the filters.
        await eventually(async () => {
          const every = await all(backend.listGenerations({}));
          expect(every.map((g) => [g.id, g.state])).toEqual([
            ["g1", "joining"],
            ["g2", "standby"],
            ["g3", "joining"],
          ]);
        });
        const api = await all(backend.listGenerations({ service: "api" }, { limit: 1 }));
        expect(api.map((g) => [g.id, g.state])).toEqual([
          ["g1", "joining"],
          ["g2", "standby"],
        ]);
        expect((await all(backend.listGenerations({ state: "joining" }))).map((g) => g.id)).toEqual(["g1", "g3"]);
        await expectCode(all(backend.listClaims({}, { limit: 0 })), "invalid_request");
        await expectCode(all(backend.listClaims({}, { limit: 501 })), "invalid_request");
      }),
    );
  });
}
