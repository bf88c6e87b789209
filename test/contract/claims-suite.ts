/**
 * The claims contract: one suite that every `ClaimsBackend` must pass — the in-memory
 * backend (unit project) and the HTTP client against the real server (e2e project).
 *
 * Ported from the shiftlock certification suite (reference §4.1) and contract suite
 * (§4.3/§4.4), with the protocol's stronger rules where they differ (tokens advance by exactly 1,
 * losers get `claim_held`, abort leaves phase `owned`, a stale release changes nothing),
 * plus the protocol's operation-id replay, validation, batch and watch rules.
 */
import { describe, expect, it } from "vitest";
import { MAX_FENCING_TOKEN } from "../../src/protocol/counter.ts";
import type { ShiftlockError } from "../../src/protocol/errors.ts";
import { expectCode, fixtureRunner, MINUTE, type ClaimsFixture } from "./claims-suite-helpers.ts";
import { runBatchChecks } from "./claims-suite-batch.ts";
import { runEvictChecks } from "./claims-suite-evict.ts";
import { runSessionChecks } from "./claims-suite-sessions.ts";
import { runListingChecks } from "./claims-suite-listing.ts";
import { runRuleChecks } from "./claims-suite-rules.ts";
import { runWatchChecks } from "./claims-suite-watch.ts";

export type { ClaimsFixture };

/** What a backend under test can do beyond the interface. */
export interface ContractOptions {
  /** The fixture has `forceSetToken` (the overflow checks run only then). */
  seedsTokens: boolean;
}

export function runClaimsContract(
  label: string,
  makeFixture: () => Promise<ClaimsFixture>,
  options: ContractOptions,
): void {
  const withFixture = fixtureRunner(makeFixture);

  describe(`claims contract: ${label}`, () => {
    describe("certification (reference §4.1)", () => {
      it(
        "single owner: a second generation gets claim_held with the holder's record",
        withFixture(async ({ backend }, c) => {
          const a = await backend.acquireClaim({ claimName: c, generationId: "a", ttlMs: MINUTE, operationId: "1" });
          expect(a.fencingToken).toBe(1n);
          const err = await expectCode(
            backend.acquireClaim({ claimName: c, generationId: "b", ttlMs: MINUTE, operationId: "2" }),
            "claim_held",
          );
          expect(err.status).toBe(409);
          expect(err.details["claim"]).toMatchObject({ ownerGeneration: "a", fencingToken: 1n });
        }),
      );

      it(
        "token monotonic: each acquire of an unowned claim advances the token by exactly 1",
        withFixture(async ({ backend }) => {
          let previous = 0n;
          for (const id of ["ga", "gb", "gc", "gd", "ge"]) {
            const rec = await backend.acquireClaim({
              claimName: "j",
              generationId: id,
              ttlMs: 100,
              operationId: `a${id}`,
            });
            expect(rec.fencingToken).toBe(previous + 1n);
            previous = rec.fencingToken;
            // Even if the 100 ms lease expired meanwhile, the owner's release succeeds (§4.3).
            await backend.releaseClaim({
              claimName: "j",
              generationId: id,
              token: rec.fencingToken,
              operationId: `r${id}`,
            });
          }
        }),
      );

      it(
        "stale release: a former owner's token is refused and the new owner is unchanged",
        withFixture(async ({ backend }, c) => {
          const old = await backend.acquireClaim({
            claimName: c,
            generationId: "old",
            ttlMs: MINUTE,
            operationId: "a",
          });
          await backend.releaseClaim({ claimName: c, generationId: "old", token: old.fencingToken, operationId: "r" });
          const rec2 = await backend.acquireClaim({
            claimName: c,
            generationId: "new",
            ttlMs: MINUTE,
            operationId: "b",
          });
          expect(rec2.fencingToken).toBe(old.fencingToken + 1n);
          await expectCode(
            backend.releaseClaim({ claimName: c, generationId: "old", token: old.fencingToken, operationId: "stale" }),
            "stale_token",
          );
          const now = await backend.getClaim(c);
          expect(now.ownerGeneration).toBe("new");
          expect(now.fencingToken).toBe(rec2.fencingToken);
          expect(now.phase).toBe("owned");
        }),
      );

      it(
        "abort does not advance the token and leaves the owner in phase owned",
        withFixture(async ({ backend }, c) => {
          const a = await backend.acquireClaim({ claimName: c, generationId: "a", ttlMs: MINUTE, operationId: "a" });
          const tok = a.fencingToken;
          await backend.prepareTransfer({
            claimName: c,
            fromGeneration: "a",
            toGeneration: "b",
            token: tok,
            ttlMs: MINUTE,
            operationId: "p",
          });
          const out = await backend.abortTransfer({
            claimName: c,
            fromGeneration: "a",
            toGeneration: "b",
            expectedToken: tok,
            operationId: "ab",
          });
          expect(out).toMatchObject({
            fencingToken: tok,
            ownerGeneration: "a",
            phase: "owned",
            pendingSuccessor: "",
            transferStatus: "aborted",
            reason: "transfer_aborted",
          });
        }),
      );

      it(
        "commit is idempotent: a retry with the same operation id does not advance twice",
        withFixture(async ({ backend }, c) => {
          const a = await backend.acquireClaim({ claimName: c, generationId: "a", ttlMs: MINUTE, operationId: "acq" });
          const tok = a.fencingToken;
          await backend.prepareTransfer({
            claimName: c,
            fromGeneration: "a",
            toGeneration: "b",
            token: tok,
            ttlMs: MINUTE,
            operationId: "p",
          });
          const commit = {
            claimName: c,
            fromGeneration: "a",
            toGeneration: "b",
            expectedToken: tok,
            ttlMs: MINUTE,
            operationId: "commit-1",
          };
          const out1 = await backend.commitTransfer(commit);
          const out2 = await backend.commitTransfer(commit);
          expect(out1.fencingToken).toBe(tok + 1n);
          expect(out2).toEqual(out1);
          expect(out2.ownerGeneration).toBe("b");
        }),
      );

      it(
        "50 concurrent acquires: exactly one winner, 49 claim_held",
        withFixture(async ({ backend }, c) => {
          const results = await Promise.allSettled(
            Array.from({ length: 50 }, (_, i) =>
              backend.acquireClaim({ claimName: c, generationId: `x-${i}`, ttlMs: MINUTE }),
            ),
          );
          const winners = results.filter((r) => r.status === "fulfilled");
          const losers = results.filter((r): r is PromiseRejectedResult => r.status === "rejected");
          expect(winners).toHaveLength(1);
          expect(losers.map((l) => (l.reason as ShiftlockError).code)).toEqual(Array(49).fill("claim_held"));
          const owner = await backend.getClaim(c);
          expect(owner.fencingToken).toBe(1n);
          expect(winners[0]?.status === "fulfilled" && winners[0].value.ownerGeneration).toBe(owner.ownerGeneration);
        }),
      );

      it.skipIf(!options.seedsTokens)(
        "overflow: a token at 2^64-2 cannot advance (acquire and commit), the reservation is kept",
        withFixture(async (f, c) => {
          const { backend } = f;
          f.forceSetToken?.(c, MAX_FENCING_TOKEN - 1n);
          const last = await backend.acquireClaim({ claimName: c, generationId: "a", ttlMs: MINUTE });
          expect(last.fencingToken).toBe(MAX_FENCING_TOKEN);
          await backend.prepareTransfer({
            claimName: c,
            fromGeneration: "a",
            toGeneration: "b",
            token: last.fencingToken,
            ttlMs: MINUTE,
          });
          const commit = {
            claimName: c,
            fromGeneration: "a",
            toGeneration: "b",
            expectedToken: MAX_FENCING_TOKEN,
            ttlMs: MINUTE,
          };
          await expectCode(backend.commitTransfer(commit), "token_overflow");
          expect(await backend.getClaim(c)).toMatchObject({
            phase: "reserved",
            ownerGeneration: "a",
            pendingSuccessor: "b",
          });
          await backend.releaseClaim({ claimName: c, generationId: "a", token: MAX_FENCING_TOKEN });
          await expectCode(backend.acquireClaim({ claimName: c, generationId: "a", ttlMs: MINUTE }), "token_overflow");
          expect((await backend.getClaim(c)).fencingToken).toBe(MAX_FENCING_TOKEN);
        }),
      );
    });

    describe("contract (reference §4.3, §4.4)", () => {
      it(
        "transfer commit hands the claim to the successor with token + 1",
        withFixture(async ({ backend }, c) => {
          // Registration is not required by claims (§4.1 never registers); §4.3 does register.
          await backend.registerGeneration({ id: "a", service: "s", instanceId: "1" });
          await backend.registerGeneration({ id: "b", service: "s", instanceId: "2" });
          const a = await backend.acquireClaim({ claimName: c, generationId: "a", ttlMs: MINUTE });
          const prepared = await backend.prepareTransfer({
            claimName: c,
            fromGeneration: "a",
            toGeneration: "b",
            token: a.fencingToken,
            ttlMs: MINUTE,
          });
          expect(prepared).toMatchObject({
            phase: "reserved",
            pendingSuccessor: "b",
            transferStatus: "prepared",
            drainStatus: "complete",
            fencingToken: a.fencingToken,
          });
          const out = await backend.commitTransfer({
            claimName: c,
            fromGeneration: "a",
            toGeneration: "b",
            expectedToken: a.fencingToken,
            ttlMs: MINUTE,
          });
          expect(out).toMatchObject({
            ownerGeneration: "b",
            fencingToken: a.fencingToken + 1n,
            previousOwner: "a",
            phase: "owned",
            transferStatus: "committed",
            reason: "transfer_committed",
          });
        }),
      );

      it(
        "a commit whose response was lost succeeds again without an operation id",
        withFixture(async ({ backend }, c) => {
          const a = await backend.acquireClaim({ claimName: c, generationId: "a", ttlMs: MINUTE });
          const base = { claimName: c, fromGeneration: "a", toGeneration: "b" };
          await backend.prepareTransfer({ ...base, token: a.fencingToken, ttlMs: MINUTE });
          const first = await backend.commitTransfer({ ...base, expectedToken: a.fencingToken, ttlMs: MINUTE });
          const again = await backend.commitTransfer({ ...base, expectedToken: a.fencingToken, ttlMs: MINUTE });
          expect(again.fencingToken).toBe(first.fencingToken);
          expect(again.ownerGeneration).toBe("b");
          expect(again.version).toBe(first.version);
          // The old owner's abort after the commit finds nothing to abort.
          await expectCode(backend.abortTransfer({ ...base, expectedToken: a.fencingToken }), "no_transfer");
        }),
      );
    });
    runRuleChecks(withFixture);
    runBatchChecks(withFixture);
    runListingChecks(withFixture);
    runWatchChecks(withFixture);
    runEvictChecks(withFixture);
    runSessionChecks(withFixture);
  });
}
