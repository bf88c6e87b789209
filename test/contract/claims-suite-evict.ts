/**
 * Claims contract, part 5: an operator's eviction (docs/protocol.md#eviction) — the record it
 * leaves, the `evicted` refusal of the evicted owner's token until the next acquire, replays
 * of operations completed before it, the event watchers hear, and `whoami`.
 */
import { describe, expect, it } from "vitest";
import { expectCode, MINUTE, nextItem, type FixtureTest } from "./claims-suite-helpers.ts";

export function runEvictChecks(withFixture: (body: FixtureTest) => () => Promise<void>): void {
  describe("evict (operators)", () => {
    it(
      "an owned claim becomes unowned with reason evicted; the evicted token is refused evicted, then the next acquire gets token+1",
      withFixture(async ({ backend, operator }, c) => {
        const a = await backend.acquireClaim({ claimName: c, generationId: "a", ttlMs: MINUTE });
        const evicted = await operator.evictClaim({ claimName: c, note: "stuck since 04:00" });
        expect(evicted).toMatchObject({
          phase: "unowned",
          ownerGeneration: "",
          previousOwner: "a",
          reason: "evicted",
          fencingToken: a.fencingToken,
          version: a.version + 1n,
        });
        const token = a.fencingToken;
        const refusals = [
          () => backend.renewClaim({ claimName: c, generationId: "a", token, ttlMs: MINUTE }),
          () => backend.releaseClaim({ claimName: c, generationId: "a", token }),
          () => backend.prepareTransfer({ claimName: c, fromGeneration: "a", toGeneration: "b", token, ttlMs: MINUTE }),
          () =>
            backend.commitTransfer({
              claimName: c,
              fromGeneration: "a",
              toGeneration: "b",
              expectedToken: token,
              ttlMs: MINUTE,
            }),
          () => backend.abortTransfer({ claimName: c, fromGeneration: "a", toGeneration: "b", expectedToken: token }),
          // Checked before not_owner: another generation presenting that token hears the same.
          () => backend.renewClaim({ claimName: c, generationId: "z", token, ttlMs: MINUTE }),
        ];
        for (const refused of refusals) {
          const err = await expectCode(refused(), "evicted");
          expect(err.status).toBe(409);
          expect(err.details["claim"]).toMatchObject({ reason: "evicted", fencingToken: token });
        }
        // The refusals changed nothing.
        expect(await backend.getClaim(c)).toEqual(evicted);
        // The evicted generation may acquire again, with a greater token; then the usual rules apply.
        const again = await backend.acquireClaim({ claimName: c, generationId: "a", ttlMs: MINUTE });
        expect(again.fencingToken).toBe(token + 1n);
        await expectCode(backend.renewClaim({ claimName: c, generationId: "a", token, ttlMs: MINUTE }), "stale_token");
        await expectCode(backend.renewClaim({ claimName: c, generationId: "b", token, ttlMs: MINUTE }), "not_owner");
      }),
    );

    it(
      "a reserved claim: the pending transfer is dropped; commit and abort with the evicted token are refused evicted",
      withFixture(async ({ backend, operator }, c) => {
        const a = await backend.acquireClaim({ claimName: c, generationId: "a", ttlMs: MINUTE });
        const base = { claimName: c, fromGeneration: "a", toGeneration: "b" };
        await backend.prepareTransfer({ ...base, token: a.fencingToken, ttlMs: MINUTE });
        const evicted = await operator.evictClaim({ claimName: c });
        expect(evicted).toMatchObject({
          phase: "unowned",
          previousOwner: "a",
          pendingSuccessor: "",
          transferStatus: "",
          drainStatus: "",
          reason: "evicted",
        });
        const expectedToken = a.fencingToken;
        await expectCode(backend.commitTransfer({ ...base, expectedToken, ttlMs: MINUTE }), "evicted");
        await expectCode(backend.abortTransfer({ ...base, expectedToken }), "evicted");
        // The successor acquires like anyone: token+1.
        const b = await backend.acquireClaim({ claimName: c, generationId: "b", ttlMs: MINUTE });
        expect(b.fencingToken).toBe(expectedToken + 1n);
      }),
    );

    it(
      "an operation completed before the eviction still replays its answer; a new one is refused evicted",
      withFixture(async ({ backend, operator }, c) => {
        const a = await backend.acquireClaim({ claimName: c, generationId: "a", ttlMs: MINUTE });
        const renew = { claimName: c, generationId: "a", token: a.fencingToken, ttlMs: MINUTE };
        const renewed = await backend.renewClaim({ ...renew, operationId: "renew-1" });
        await operator.evictClaim({ claimName: c });
        expect(await backend.renewClaim({ ...renew, operationId: "renew-1" })).toEqual(renewed);
        await expectCode(backend.renewClaim({ ...renew, operationId: "renew-2" }), "evicted");
        // The refusal is remembered like any 409: its replay is the same refusal, after an acquire too.
        await backend.acquireClaim({ claimName: c, generationId: "b", ttlMs: MINUTE });
        await expectCode(backend.renewClaim({ ...renew, operationId: "renew-2" }), "evicted");
      }),
    );

    it(
      "an unowned claim is answered unchanged; a claim never acquired is claim_not_found; a note over 256 bytes is invalid",
      withFixture(async ({ backend, operator }, c) => {
        await expectCode(operator.evictClaim({ claimName: c }), "claim_not_found");
        const a = await backend.acquireClaim({ claimName: c, generationId: "a", ttlMs: MINUTE });
        const released = await backend.releaseClaim({ claimName: c, generationId: "a", token: a.fencingToken });
        expect(await operator.evictClaim({ claimName: c, note: "too late" })).toEqual(released);
        // Released, not evicted: a retried release still succeeds.
        await backend.releaseClaim({ claimName: c, generationId: "a", token: a.fencingToken });
        const b = await backend.acquireClaim({ claimName: c, generationId: "b", ttlMs: MINUTE });
        const err = await expectCode(operator.evictClaim({ claimName: c, note: "é".repeat(129) }), "invalid_request");
        expect(err.details["field"]).toBe("note");
        expect(await backend.getClaim(c)).toEqual(b);
        // Exactly 256 bytes is accepted.
        expect((await operator.evictClaim({ claimName: c, note: "é".repeat(128) })).reason).toBe("evicted");
      }),
    );

    it(
      "watchers hear an evicted event carrying the note, and a resumed watch replays it",
      withFixture(async ({ backend, operator }, c) => {
        const a = await backend.acquireClaim({ claimName: c, generationId: "a", ttlMs: MINUTE });
        const watch = backend.watchClaim(c);
        const it = watch[Symbol.asyncIterator]();
        try {
          expect(await nextItem(it)).toMatchObject({ type: "snapshot", claim: a });
          const evicted = await operator.evictClaim({ claimName: c, note: "INC-123" });
          expect(await nextItem(it)).toEqual({
            type: "event",
            reason: "evicted",
            claim: evicted,
            timeMs: expect.any(Number),
            note: "INC-123",
          });
        } finally {
          watch.close();
        }
        const resumed = backend.watchClaim(c, { afterVersion: a.version });
        const again = resumed[Symbol.asyncIterator]();
        try {
          expect(await nextItem(again)).toMatchObject({ type: "event", reason: "evicted", note: "INC-123" });
        } finally {
          resumed.close();
        }
      }),
    );

    it(
      "whoami names the operator's token and its admin role",
      withFixture(async ({ operator }) => {
        expect((await operator.whoami()).role).toBe("admin");
      }),
    );
  });
}
