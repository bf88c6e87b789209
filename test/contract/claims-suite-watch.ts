/**
 * Claims contract, part 3: watches — snapshot, live events in version order, resume by
 * version without gaps or duplicates, expiry heard without anyone touching the claim.
 */
import { describe, expect, it } from "vitest";
import { MINUTE, nextItem, type FixtureTest } from "./claims-suite-helpers.ts";

export function runWatchChecks(withFixture: (body: FixtureTest) => () => Promise<void>): void {
  describe("watch", () => {
    it(
      "a snapshot first, then acquired / transfer / released events in version order; renewals are silent",
      withFixture(async ({ backend }, c) => {
        const watch = backend.watchClaim(c);
        const it = watch[Symbol.asyncIterator]();
        try {
          expect(await nextItem(it)).toEqual({ type: "snapshot", claim: null, truncated: false });
          const a = await backend.acquireClaim({ claimName: c, generationId: "a", ttlMs: MINUTE });
          const acquired = await nextItem(it);
          expect(acquired).toMatchObject({ type: "event", reason: "acquired", claim: a });
          expect(acquired.type === "event" && acquired.timeMs).toBeGreaterThan(0);
          await backend.renewClaim({ claimName: c, generationId: "a", token: a.fencingToken, ttlMs: MINUTE });
          const base = { claimName: c, fromGeneration: "a", toGeneration: "b" };
          const p = await backend.prepareTransfer({ ...base, token: a.fencingToken, ttlMs: MINUTE });
          const committed = await backend.commitTransfer({ ...base, expectedToken: a.fencingToken, ttlMs: MINUTE });
          const released = await backend.releaseClaim({
            claimName: c,
            generationId: "b",
            token: committed.fencingToken,
          });
          expect(await nextItem(it)).toMatchObject({ type: "event", reason: "transfer_prepared", claim: p });
          expect(await nextItem(it)).toMatchObject({ type: "event", reason: "transfer_committed", claim: committed });
          expect(await nextItem(it)).toMatchObject({ type: "event", reason: "released", claim: released });
        } finally {
          watch.close();
        }
        expect((await it.next()).done).toBe(true);
      }),
    );

    it(
      "resuming with afterVersion replays exactly the missed events, without a snapshot",
      withFixture(async ({ backend }, c) => {
        const a = await backend.acquireClaim({ claimName: c, generationId: "a", ttlMs: MINUTE });
        await backend.renewClaim({ claimName: c, generationId: "a", token: a.fencingToken, ttlMs: MINUTE });
        const released = await backend.releaseClaim({ claimName: c, generationId: "a", token: a.fencingToken });
        const b = await backend.acquireClaim({ claimName: c, generationId: "b", ttlMs: MINUTE });
        const watch = backend.watchClaim(c, { afterVersion: a.version });
        const it = watch[Symbol.asyncIterator]();
        try {
          expect(await nextItem(it)).toMatchObject({ type: "event", reason: "released", claim: released });
          expect(await nextItem(it)).toMatchObject({ type: "event", reason: "acquired", claim: b });
          const c2 = await backend.releaseClaim({ claimName: c, generationId: "b", token: b.fencingToken });
          expect(await nextItem(it)).toMatchObject({ type: "event", reason: "released", claim: c2 });
        } finally {
          watch.close();
        }
      }),
    );

    it(
      "a watcher hears expired when the lease runs out, with nobody touching the claim",
      withFixture(async ({ backend, passTime }, c) => {
        const a = await backend.acquireClaim({ claimName: c, generationId: "a", ttlMs: 100 });
        const watch = backend.watchClaim(c);
        const it = watch[Symbol.asyncIterator]();
        try {
          expect(await nextItem(it)).toMatchObject({ type: "snapshot", claim: { ownerGeneration: "a" } });
          const next = nextItem(it);
          await passTime(150);
          const expired = await next;
          expect(expired).toMatchObject({
            type: "event",
            reason: "expired",
            claim: { phase: "unowned", previousOwner: "a", fencingToken: a.fencingToken, version: a.version + 1n },
          });
          expect(expired.type === "event" && expired.timeMs).toBeGreaterThan(a.expiresAtMs);
        } finally {
          watch.close();
        }
      }),
    );

    it(
      "an afterVersion outside 0..2^64-1 is refused up front",
      withFixture(async ({ backend }, c) => {
        await Promise.resolve();
        for (const afterVersion of [-1n, 1n << 64n]) {
          expect(() => backend.watchClaim(c, { afterVersion })).toThrow(
            expect.objectContaining({ code: "invalid_request", details: { field: "afterVersion" } }),
          );
        }
      }),
    );

    it(
      "aborting the signal ends the iteration with the signal's reason",
      withFixture(async ({ backend }, c) => {
        const controller = new AbortController();
        const watch = backend.watchClaim(c, { signal: controller.signal });
        const it = watch[Symbol.asyncIterator]();
        expect((await nextItem(it)).type).toBe("snapshot");
        const pending = it.next();
        const reason = new Error("stop watching");
        controller.abort(reason);
        await expect(pending).rejects.toBe(reason);
      }),
    );
  });
}
