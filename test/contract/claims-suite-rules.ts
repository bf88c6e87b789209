/**
 * Claims contract, part 2: the rules of docs/protocol.md#claim-rules one by one — operation ids, acquire/renew/
 * transfer/release edge cases, expiry, validation and generations.
 */
import { describe, expect, it } from "vitest";
import { expectCode, MINUTE, type FixtureTest } from "./claims-suite-helpers.ts";

export function runRuleChecks(withFixture: (body: FixtureTest) => () => Promise<void>): void {
  describe("operation ids", () => {
    it(
      "a retry with the same id and request returns the first response, without side effects",
      withFixture(async ({ backend }, c) => {
        const req = { claimName: c, generationId: "a", ttlMs: MINUTE, operationId: "op-1" };
        const first = await backend.acquireClaim(req);
        await backend.releaseClaim({ claimName: c, generationId: "a", token: first.fencingToken });
        // The claim is now unowned; the replay still answers the original acquire, and acquires nothing.
        expect(await backend.acquireClaim(req)).toEqual(first);
        const now = await backend.getClaim(c);
        expect(now.phase).toBe("unowned");
        expect(now.fencingToken).toBe(first.fencingToken);
      }),
    );

    it(
      "the same id with a different request is operation_id_conflict",
      withFixture(async ({ backend }, c) => {
        const a = await backend.acquireClaim({ claimName: c, generationId: "a", ttlMs: MINUTE, operationId: "op" });
        await expectCode(
          backend.acquireClaim({ claimName: c, generationId: "a", ttlMs: MINUTE + 1, operationId: "op" }),
          "operation_id_conflict",
        );
        await expectCode(
          backend.renewClaim({
            claimName: c,
            generationId: "a",
            token: a.fencingToken,
            ttlMs: MINUTE,
            operationId: "op",
          }),
          "operation_id_conflict",
        );
      }),
    );

    it(
      "409 outcomes are remembered; ids are scoped to the claim; 400s are not remembered",
      withFixture(async ({ backend }, c) => {
        const a = await backend.acquireClaim({ claimName: c, generationId: "a", ttlMs: MINUTE });
        const lose = { claimName: c, generationId: "b", ttlMs: MINUTE, operationId: "try-b" };
        await expectCode(backend.acquireClaim(lose), "claim_held");
        await backend.releaseClaim({ claimName: c, generationId: "a", token: a.fencingToken });
        await expectCode(backend.acquireClaim(lose), "claim_held"); // replayed, not re-executed
        expect((await backend.getClaim(c)).phase).toBe("unowned");
        // The same id on another claim is a different operation.
        const other = await backend.acquireClaim({ ...lose, claimName: `${c}-other` });
        expect(other.ownerGeneration).toBe("b");
        // A 400 is not remembered: fixing the request under the same id works.
        await expectCode(backend.acquireClaim({ ...lose, ttlMs: 1, operationId: "fix-me" }), "invalid_request");
        expect((await backend.acquireClaim({ ...lose, operationId: "fix-me" })).ownerGeneration).toBe("b");
      }),
    );
  });

  describe("rules", () => {
    it(
      "reading never creates: an unknown claim is claim_not_found",
      withFixture(async ({ backend }, c) => {
        await expectCode(backend.getClaim(c), "claim_not_found");
        await expectCode(
          backend.renewClaim({ claimName: c, generationId: "a", token: 0n, ttlMs: MINUTE }),
          "claim_not_found",
        );
        await expectCode(backend.releaseClaim({ claimName: c, generationId: "a", token: 0n }), "claim_not_found");
        await expectCode(backend.getClaim(c), "claim_not_found");
      }),
    );

    it(
      "a same-owner acquire extends without advancing the token; allowEmptyOnly refuses it",
      withFixture(async ({ backend }, c) => {
        const a = await backend.acquireClaim({ claimName: c, generationId: "a", ttlMs: MINUTE });
        expect(a).toMatchObject({ phase: "owned", reason: "acquired", ownerGeneration: "a" });
        const again = await backend.acquireClaim({ claimName: c, generationId: "a", ttlMs: 2 * MINUTE });
        expect(again.fencingToken).toBe(a.fencingToken);
        expect(again.reason).toBe("renewed");
        expect(again.expiresAtMs).toBeGreaterThanOrEqual(a.expiresAtMs + MINUTE - 1_000);
        // Never shortens.
        const shorter = await backend.acquireClaim({ claimName: c, generationId: "a", ttlMs: 100 });
        expect(shorter.expiresAtMs).toBe(again.expiresAtMs);
        await expectCode(
          backend.acquireClaim({ claimName: c, generationId: "a", ttlMs: MINUTE, allowEmptyOnly: true }),
          "claim_held",
        );
      }),
    );

    it(
      "renew: not_owner for another generation, stale_token for a wrong token, else extends",
      withFixture(async ({ backend }, c) => {
        const a = await backend.acquireClaim({ claimName: c, generationId: "a", ttlMs: MINUTE });
        await expectCode(
          backend.renewClaim({ claimName: c, generationId: "b", token: a.fencingToken, ttlMs: MINUTE }),
          "not_owner",
        );
        await expectCode(
          backend.renewClaim({ claimName: c, generationId: "a", token: a.fencingToken + 1n, ttlMs: MINUTE }),
          "stale_token",
        );
        const r = await backend.renewClaim({
          claimName: c,
          generationId: "a",
          token: a.fencingToken,
          ttlMs: 2 * MINUTE,
        });
        expect(r).toMatchObject({ reason: "renewed", fencingToken: a.fencingToken, ownerGeneration: "a" });
        expect(r.version).toBe(a.version + 1n);
        expect(r.expiresAtMs).toBeGreaterThan(a.expiresAtMs);
      }),
    );

    it(
      "prepare: successor must differ, a second successor is concurrent_transfer, the same one is a no-op",
      withFixture(async ({ backend }, c) => {
        const a = await backend.acquireClaim({ claimName: c, generationId: "a", ttlMs: MINUTE });
        const prep = { claimName: c, fromGeneration: "a", token: a.fencingToken, ttlMs: MINUTE };
        const err = await expectCode(backend.prepareTransfer({ ...prep, toGeneration: "a" }), "invalid_request");
        expect(err.details["field"]).toBe("toGeneration");
        await expectCode(backend.prepareTransfer({ ...prep, fromGeneration: "z", toGeneration: "b" }), "not_owner");
        await expectCode(backend.prepareTransfer({ ...prep, token: 99n, toGeneration: "b" }), "stale_token");
        const p1 = await backend.prepareTransfer({ ...prep, toGeneration: "b" });
        expect(await backend.prepareTransfer({ ...prep, toGeneration: "b" })).toEqual(p1);
        await expectCode(backend.prepareTransfer({ ...prep, toGeneration: "c" }), "concurrent_transfer");
        const commit = { claimName: c, fromGeneration: "a", expectedToken: a.fencingToken, ttlMs: MINUTE };
        await expectCode(backend.commitTransfer({ ...commit, toGeneration: "c" }), "concurrent_transfer");
        await expectCode(backend.commitTransfer({ ...commit, toGeneration: "b", expectedToken: 7n }), "stale_token");
        // Renew is allowed while reserved, and keeps the reservation.
        const r = await backend.renewClaim({ claimName: c, generationId: "a", token: a.fencingToken, ttlMs: MINUTE });
        expect(r.phase).toBe("reserved");
      }),
    );

    it(
      "commit and abort without a pending transfer",
      withFixture(async ({ backend }, c) => {
        const a = await backend.acquireClaim({ claimName: c, generationId: "a", ttlMs: MINUTE });
        const t = { claimName: c, fromGeneration: "a", toGeneration: "b", expectedToken: a.fencingToken };
        await expectCode(backend.commitTransfer({ ...t, ttlMs: MINUTE }), "no_transfer");
        // Abort while owned by `from`: success, nothing changes.
        expect(await backend.abortTransfer(t)).toEqual(a);
        await expectCode(backend.abortTransfer({ ...t, fromGeneration: "z" }), "no_transfer");
      }),
    );

    it(
      "release: drops a pending transfer; a retried release succeeds; not_owner for others",
      withFixture(async ({ backend }, c) => {
        const a = await backend.acquireClaim({ claimName: c, generationId: "a", ttlMs: MINUTE });
        const tok = a.fencingToken;
        await backend.prepareTransfer({
          claimName: c,
          fromGeneration: "a",
          toGeneration: "b",
          token: tok,
          ttlMs: MINUTE,
        });
        await expectCode(backend.releaseClaim({ claimName: c, generationId: "b", token: tok }), "not_owner");
        const released = await backend.releaseClaim({ claimName: c, generationId: "a", token: tok });
        expect(released).toMatchObject({
          phase: "unowned",
          ownerGeneration: "",
          previousOwner: "a",
          pendingSuccessor: "",
          transferStatus: "",
          reason: "released",
          fencingToken: tok,
        });
        expect(await backend.releaseClaim({ claimName: c, generationId: "a", token: tok })).toEqual(released);
        await expectCode(backend.releaseClaim({ claimName: c, generationId: "z", token: tok }), "not_owner");
        const next = await backend.acquireClaim({ claimName: c, generationId: "b", ttlMs: MINUTE });
        expect(next).toMatchObject({ fencingToken: tok + 1n, previousOwner: "a", transferStatus: "" });
      }),
    );

    it(
      "expiry: after the deadline the claim is unowned (reason expired), the token is kept",
      withFixture(async ({ backend, passTime }, c) => {
        const a = await backend.acquireClaim({ claimName: c, generationId: "a", ttlMs: 100 });
        await passTime(250);
        const now = await backend.getClaim(c);
        expect(now).toMatchObject({ phase: "unowned", ownerGeneration: "", previousOwner: "a", reason: "expired" });
        expect(now.fencingToken).toBe(a.fencingToken);
        await expectCode(
          backend.renewClaim({ claimName: c, generationId: "a", token: a.fencingToken, ttlMs: MINUTE }),
          "not_owner",
        );
        const b = await backend.acquireClaim({ claimName: c, generationId: "b", ttlMs: MINUTE });
        expect(b.fencingToken).toBe(a.fencingToken + 1n);
      }),
    );

    it(
      "names may hold '/', spaces and any Unicode; bad input is invalid_request naming the field",
      withFixture(async ({ backend }, c) => {
        const odd = `${c}/with space/ü/🔒?#%`;
        const a = await backend.acquireClaim({ claimName: odd, generationId: "g/1", ttlMs: MINUTE });
        expect(a.name).toBe(odd);
        expect((await backend.getClaim(odd)).ownerGeneration).toBe("g/1");
        await expectCode(backend.getClaim(c), "claim_not_found");
        const ttl = await expectCode(
          backend.acquireClaim({ claimName: c, generationId: "a", ttlMs: 99 }),
          "invalid_request",
        );
        expect(ttl.details["field"]).toBe("ttlMs");
        const long = await expectCode(
          backend.acquireClaim({ claimName: c, generationId: "x".repeat(257), ttlMs: MINUTE }),
          "invalid_request",
        );
        expect(long.details["field"]).toBe("generationId");
        await expectCode(
          backend.acquireClaim({ claimName: "a\u0007b", generationId: "a", ttlMs: MINUTE }),
          "invalid_request",
        );
        // "." and ".." are dot segments to every URL parser (even as %2E): refused, never misrouted.
        for (const name of ["", ".", ".."]) {
          const e = await expectCode(backend.getClaim(name), "invalid_request");
          expect(e.details["field"]).toBe("claim");
        }
        await expectCode(backend.getGeneration(".."), "invalid_request");
        await expectCode(backend.getClaim(c), "claim_not_found"); // nothing was created by bad input
      }),
    );
  });

  describe("generations", () => {
    it(
      "register is idempotent for the same identity; another identity is generation_exists",
      withFixture(async ({ backend }, c) => {
        const g = await backend.registerGeneration({ id: c, service: "svc", instanceId: "i-1" });
        expect(g).toMatchObject({ id: c, service: "svc", instanceId: "i-1", state: "joining" });
        expect(await backend.registerGeneration({ id: c, service: "svc", instanceId: "i-1" })).toEqual(g);
        await expectCode(backend.registerGeneration({ id: c, service: "svc", instanceId: "i-2" }), "generation_exists");
        expect(await backend.getGeneration(c)).toEqual(g);
        await expectCode(backend.getGeneration(`${c}-none`), "generation_not_found");
      }),
    );

    it(
      "only legal state moves; retired is final; the same state updates the reason",
      withFixture(async ({ backend }, c) => {
        await backend.registerGeneration({ id: c, service: "svc", instanceId: "i" });
        await expectCode(backend.updateGeneration({ id: c, state: "active" }), "invalid_state"); // joining ↛ active
        expect((await backend.updateGeneration({ id: c, state: "standby" })).state).toBe("standby");
        expect((await backend.updateGeneration({ id: c, state: "active", reason: "won" })).reason).toBe("won");
        const same = await backend.updateGeneration({ id: c, state: "active", reason: "still" });
        expect(same).toMatchObject({ state: "active", reason: "still" });
        await backend.updateGeneration({ id: c, state: "retired" });
        await expectCode(backend.updateGeneration({ id: c, state: "active" }), "invalid_state");
        // Registering again never resets the state.
        expect((await backend.registerGeneration({ id: c, service: "svc", instanceId: "i" })).state).toBe("retired");
        await expectCode(backend.updateGeneration({ id: `${c}-none`, state: "standby" }), "generation_not_found");
      }),
    );
  });
}
