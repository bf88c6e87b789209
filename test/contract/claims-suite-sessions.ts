/**
 * Claims contract, part 6: sessions (docs/protocol.md#sessions) — the generation's lease
 * (keepalive, epochs, its end) and bound claims (no_lease, renew without a change, expiry with
 * the lease, watchers hearing it, transfers that bind to the successor).
 */
import { describe, expect, it } from "vitest";
import { expectCode, MINUTE, nextItem, type FixtureTest } from "./claims-suite-helpers.ts";
import type { ClaimsBackend } from "../../src/client/claims/claims-backend.ts";

/** A registered generation with a live lease of `ttlMs`. */
async function leased(backend: ClaimsBackend, id: string, ttlMs = MINUTE) {
  await backend.registerGeneration({ id, service: "svc", instanceId: `${id}-i` });
  return backend.keepaliveGeneration({ id, ttlMs });
}

export function runSessionChecks(withFixture: (body: FixtureTest) => () => Promise<void>): void {
  describe("sessions (docs/protocol.md#sessions)", () => {
    it(
      "a keepalive starts a lease (epoch 1), extends it, never shortens it; unknown and final generations are refused",
      withFixture(async ({ backend }, c) => {
        const g = `g-${c}`;
        await expectCode(backend.keepaliveGeneration({ id: g, ttlMs: MINUTE }), "generation_not_found");
        const registered = await backend.registerGeneration({ id: g, service: "svc", instanceId: "i" });
        expect(registered).toMatchObject({ leaseEpoch: 0n, leaseExpiresAtMs: 0 });
        const first = await backend.keepaliveGeneration({ id: g, ttlMs: MINUTE });
        expect(first.leaseEpoch).toBe(1n);
        expect(first.leaseExpiresAtMs).toBeGreaterThan(registered.updatedAtMs);
        const shorter = await backend.keepaliveGeneration({ id: g, ttlMs: 1_000 });
        expect(shorter).toMatchObject({ leaseEpoch: 1n, leaseExpiresAtMs: first.leaseExpiresAtMs });
        const longer = await backend.keepaliveGeneration({ id: g, ttlMs: 2 * MINUTE });
        expect(longer.leaseEpoch).toBe(1n);
        expect(longer.leaseExpiresAtMs).toBeGreaterThan(first.leaseExpiresAtMs);
        expect(await backend.getGeneration(g)).toMatchObject({
          leaseEpoch: 1n,
          leaseExpiresAtMs: longer.leaseExpiresAtMs,
        });
        // Retiring ends the lease; a final generation holds none again.
        const retired = await backend.updateGeneration({ id: g, state: "retired" });
        expect(retired).toMatchObject({ state: "retired", leaseExpiresAtMs: 0, leaseEpoch: 1n });
        await expectCode(backend.keepaliveGeneration({ id: g, ttlMs: MINUTE }), "invalid_state");
      }),
    );

    it(
      "bound and ttlMs are exclusive; a bound acquire without a live lease is no_lease and changes nothing",
      withFixture(async ({ backend }, c) => {
        const g = `g-${c}`;
        const both = await expectCode(
          backend.acquireClaim({ claimName: c, generationId: g, bound: true, ttlMs: MINUTE }),
          "invalid_request",
        );
        expect(both.details["field"]).toBe("bound");
        await expectCode(backend.acquireClaim({ claimName: c, generationId: g, bound: true }), "no_lease");
        await backend.registerGeneration({ id: g, service: "svc", instanceId: "i" });
        await expectCode(backend.acquireClaim({ claimName: c, generationId: g, bound: true }), "no_lease");
        await expectCode(backend.getClaim(c), "claim_not_found");
      }),
    );

    it(
      "a bound claim follows the lease: renew changes nothing, others are refused, the end expires it and watchers hear it",
      withFixture(async ({ backend }, c) => {
        const g = `g-${c}`;
        const lease = await leased(backend, g);
        const held = await backend.acquireClaim({ claimName: c, generationId: g, bound: true });
        expect(held).toMatchObject({
          phase: "owned",
          ownerGeneration: g,
          bound: true,
          leaseEpoch: 1n,
          expiresAtMs: lease.leaseExpiresAtMs,
          fencingToken: 1n,
        });
        const renewed = await backend.renewClaim({ claimName: c, generationId: g, token: 1n, ttlMs: 1_000 });
        expect(renewed).toEqual(held);
        await expectCode(backend.acquireClaim({ claimName: c, generationId: "other", ttlMs: MINUTE }), "claim_held");
        // The same owner binding again changes nothing.
        expect(await backend.acquireClaim({ claimName: c, generationId: g, bound: true })).toEqual(held);

        const watch = backend.watchClaim(c, { afterVersion: held.version });
        const it = watch[Symbol.asyncIterator]();
        try {
          const ended = await backend.endGenerationLease(g);
          expect(ended).toMatchObject({ leaseEpoch: 1n, leaseExpiresAtMs: 0 });
          const heard = await nextItem(it);
          expect(heard).toMatchObject({
            type: "event",
            reason: "expired",
            claim: { phase: "unowned", previousOwner: g, bound: false, fencingToken: 1n },
          });
        } finally {
          watch.close();
        }
        // A new epoch binds nothing the ended one held.
        const again = await backend.keepaliveGeneration({ id: g, ttlMs: MINUTE });
        expect(again.leaseEpoch).toBe(2n);
        expect(await backend.getClaim(c)).toMatchObject({ phase: "unowned", reason: "expired" });
        // Anyone may take it now, with the next token.
        const taken = await backend.acquireClaim({ claimName: c, generationId: "other", ttlMs: MINUTE });
        expect(taken.fencingToken).toBe(2n);
      }),
    );

    it(
      "a lease nobody keeps: past its deadline a contending acquire is granted at once (it asks the generation)",
      withFixture(async ({ backend, passTime }, c) => {
        const g = `g-${c}`;
        await leased(backend, g, 300);
        await backend.acquireClaim({ claimName: c, generationId: g, bound: true });
        await passTime(400);
        // The acquire sees the end itself: it does not wait for the generation's alarm or its delivery.
        const taken = await backend.acquireClaim({ claimName: c, generationId: "other", ttlMs: MINUTE });
        expect(taken).toMatchObject({ ownerGeneration: "other", fencingToken: 2n });
        expect(await backend.getGeneration(g)).toMatchObject({ leaseExpiresAtMs: 0, leaseEpoch: 1n });
      }),
    );

    it(
      "a lease nobody keeps ends unasked at its deadline, and its bound claims with it",
      withFixture(async ({ backend, passTime }, c) => {
        const g = `g-${c}`;
        await leased(backend, g, 300);
        await backend.acquireClaim({ claimName: c, generationId: g, bound: true });
        await passTime(700);
        expect(await backend.getClaim(c)).toMatchObject({ phase: "unowned", reason: "expired", previousOwner: g });
        expect(await backend.getGeneration(g)).toMatchObject({ leaseExpiresAtMs: 0, leaseEpoch: 1n });
        await expectCode(backend.renewClaim({ claimName: c, generationId: g, token: 1n, ttlMs: MINUTE }), "not_owner");
      }),
    );

    it(
      "a bound transfer reserves for a leased successor and binds the claim to its epoch at the commit",
      withFixture(async ({ backend }, c) => {
        const [a, b] = [`a-${c}`, `b-${c}`];
        await leased(backend, a);
        const held = await backend.acquireClaim({ claimName: c, generationId: a, bound: true });
        const base = { claimName: c, fromGeneration: a, toGeneration: b };
        await expectCode(backend.prepareTransfer({ ...base, token: held.fencingToken, bound: true }), "no_lease");
        const bLease = await leased(backend, b);
        const prepared = await backend.prepareTransfer({ ...base, token: held.fencingToken, bound: true });
        expect(prepared).toMatchObject({ phase: "reserved", bound: true, leaseEpoch: 1n, ownerGeneration: a });
        const committed = await backend.commitTransfer({ ...base, expectedToken: held.fencingToken, bound: true });
        expect(committed).toMatchObject({
          ownerGeneration: b,
          bound: true,
          leaseEpoch: bLease.leaseEpoch,
          fencingToken: held.fencingToken + 1n,
        });
        // The old owner's lease ending no longer touches the claim.
        await backend.endGenerationLease(a);
        expect(await backend.getClaim(c)).toMatchObject({ ownerGeneration: b, phase: "owned" });
      }),
    );

    it(
      "an unbound acquire by the owner unbinds the claim: it outlives the lease",
      withFixture(async ({ backend }, c) => {
        const g = `g-${c}`;
        await leased(backend, g);
        await backend.acquireClaim({ claimName: c, generationId: g, bound: true });
        const unbound = await backend.acquireClaim({ claimName: c, generationId: g, ttlMs: MINUTE });
        expect(unbound).toMatchObject({ bound: false, leaseEpoch: 0n, ownerGeneration: g });
        await backend.endGenerationLease(g);
        expect(await backend.getClaim(c)).toMatchObject({ phase: "owned", ownerGeneration: g });
      }),
    );
  });
}
