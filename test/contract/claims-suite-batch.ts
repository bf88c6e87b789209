/**
 * The claims contract, batch part (docs/protocol.md#batch): `batch(ops)` gives one outcome per op, in
 * order, each exactly what the op's single call would have given — the record, or the
 * refusal as a value — shares operation ids with the single calls, and refuses a malformed
 * batch whole without changing anything.
 */
import { describe, expect, it } from "vitest";
import type { BatchOp, BatchOutcome, ClaimRecord, ClaimsBackend } from "../../src/client/claims/claims-backend.ts";
import { ShiftlockError } from "../../src/protocol/errors.ts";
import { expectCode, MINUTE, refusal, type FixtureTest } from "./claims-suite-helpers.ts";

/** The record of an ok outcome (fails the test otherwise). */
function record(outcome: BatchOutcome | undefined): ClaimRecord {
  if (outcome?.ok !== true) throw new Error(`expected a record, got ${outcome?.error.code ?? "nothing"}`);
  return outcome.claim;
}

/** The request of a single call: the op without `op` (a stray `op` is an unknown field). */
function request<T extends BatchOp>(op: T): Omit<T, "op"> {
  const { op: _name, ...rest } = op;
  return rest;
}

/** The single call of `op`. */
function call(backend: ClaimsBackend, op: BatchOp): Promise<ClaimRecord> {
  switch (op.op) {
    case "acquire":
      return backend.acquireClaim(request(op));
    case "renew":
      return backend.renewClaim(request(op));
    case "prepare":
      return backend.prepareTransfer(request(op));
    case "commit":
      return backend.commitTransfer(request(op));
    case "abort":
      return backend.abortTransfer(request(op));
    case "release":
      return backend.releaseClaim(request(op));
  }
}

/** What the single call of `op` settles to, in the same shape as a batch outcome. */
async function single(backend: ClaimsBackend, op: BatchOp): Promise<BatchOutcome> {
  try {
    return { ok: true, claim: await call(backend, op) };
  } catch (err) {
    if (err instanceof ShiftlockError) return { ok: false, error: err };
    throw err;
  }
}

/** An outcome without server times or messages, to compare a batch op with its single call. */
function comparable(outcome: BatchOutcome): unknown {
  if (!outcome.ok) return { code: outcome.error.code, field: outcome.error.details["field"] };
  const { acquiredAtMs: _a, expiresAtMs: _e, lastHeartbeatMs: _h, name: _n, ...rest } = outcome.claim;
  return rest;
}

export function runBatchChecks(withFixture: (body: FixtureTest) => () => Promise<void>): void {
  describe("batch (docs/protocol.md#batch)", () => {
    it(
      "runs independent ops: one outcome per op, in order",
      withFixture(async ({ backend }, c) => {
        const names = [`${c}-a`, `${c}-b`, `${c}-c`];
        const outcomes = await backend.batch(
          names.map((claimName) => ({ op: "acquire", claimName, generationId: "g1", ttlMs: MINUTE })),
        );
        expect(outcomes.map((o) => [record(o).name, record(o).fencingToken, record(o).ownerGeneration])).toEqual(
          names.map((n) => [n, 1n, "g1"]),
        );
        for (const n of names) expect((await backend.getClaim(n)).ownerGeneration).toBe("g1");
      }),
    );

    it(
      "a single call carrying a stray op field is refused as an unknown field and changes nothing",
      withFixture(async ({ backend }, c) => {
        const stray = { op: "release", claimName: `${c}-stray`, generationId: "g", ttlMs: MINUTE };
        const err = await refusal(backend.acquireClaim(stray));
        expect([err.code, err.details["field"]]).toEqual(["invalid_request", "op"]);
        await expectCode(backend.getClaim(`${c}-stray`), "claim_not_found");
      }),
    );

    it(
      "each refused op is a value equal to what its single call rejects with; the others still run",
      withFixture(async ({ backend }, c) => {
        // Two identical worlds: one driven through batch, one through the single calls.
        const worlds = [`${c}-batch`, `${c}-single`];
        for (const w of worlds) {
          for (const k of ["held", "stale", "idle", "self"]) {
            await backend.acquireClaim({ claimName: `${w}-${k}`, generationId: "owner", ttlMs: MINUTE });
          }
        }
        const ops = (w: string): BatchOp[] => [
          { op: "acquire", claimName: `${w}-held`, generationId: "other", ttlMs: MINUTE }, // claim_held
          { op: "renew", claimName: `${w}-absent`, generationId: "g", token: 1n, ttlMs: MINUTE }, // claim_not_found
          { op: "release", claimName: `${w}-stale`, generationId: "owner", token: 7n }, // stale_token
          {
            op: "commit",
            claimName: `${w}-idle`,
            fromGeneration: "owner",
            toGeneration: "next",
            expectedToken: 1n,
            ttlMs: MINUTE,
          }, // no_transfer
          {
            op: "prepare",
            claimName: `${w}-self`,
            fromGeneration: "owner",
            toGeneration: "owner",
            token: 1n,
            ttlMs: MINUTE,
          }, // invalid_request toGeneration
          { op: "acquire", claimName: `${w}-short`, generationId: "g", ttlMs: 5 }, // invalid_request ttlMs
          { op: "acquire", claimName: `${w}-fresh`, generationId: "g", ttlMs: MINUTE }, // ok
        ];
        const viaBatch = await backend.batch(ops(worlds[0]!));
        const viaSingle: BatchOutcome[] = [];
        for (const op of ops(worlds[1]!)) viaSingle.push(await single(backend, op));
        expect(viaBatch.map((o) => (o.ok ? "ok" : o.error.code))).toEqual([
          "claim_held",
          "claim_not_found",
          "stale_token",
          "no_transfer",
          "invalid_request",
          "invalid_request",
          "ok",
        ]);
        expect(viaBatch.map(comparable)).toEqual(viaSingle.map(comparable));
        const held = viaBatch[0]!;
        expect(held.ok ? undefined : held.error.details["claim"]).toMatchObject({
          ownerGeneration: "owner",
          fencingToken: 1n,
        });
        expect(record(viaBatch[6]).ownerGeneration).toBe("g");
        // The refused ops changed nothing.
        expect(await backend.getClaim(`${worlds[0]!}-held`)).toMatchObject({
          ownerGeneration: "owner",
          fencingToken: 1n,
        });
        await expectCode(backend.getClaim(`${worlds[0]!}-absent`), "claim_not_found");
        await expectCode(backend.getClaim(`${worlds[0]!}-short`), "claim_not_found");
      }),
    );

    it(
      "prepares and commits several claims in two batches: the successor owns each with token + 1",
      withFixture(async ({ backend }, c) => {
        const names = [`${c}-1`, `${c}-2`, `${c}-3`];
        for (const claimName of names) await backend.acquireClaim({ claimName, generationId: "a", ttlMs: MINUTE });
        const base = { fromGeneration: "a", toGeneration: "b" };
        const prepared = await backend.batch(
          names.map((claimName) => ({ op: "prepare", claimName, ...base, token: 1n, ttlMs: MINUTE })),
        );
        expect(prepared.map((o) => record(o).phase)).toEqual(["reserved", "reserved", "reserved"]);
        const committed = await backend.batch(
          names.map((claimName) => ({ op: "commit", claimName, ...base, expectedToken: 1n, ttlMs: MINUTE })),
        );
        expect(committed.map((o) => [record(o).ownerGeneration, record(o).fencingToken])).toEqual(
          names.map(() => ["b", 2n]),
        );
        // A retried commit batch (its answer lost) succeeds again with the same records.
        const again = await backend.batch(
          names.map((claimName) => ({ op: "commit", claimName, ...base, expectedToken: 1n, ttlMs: MINUTE })),
        );
        expect(again.map((o) => record(o).version)).toEqual(committed.map((o) => record(o).version));
      }),
    );

    it(
      "shares operation ids with the single calls: replay across both, conflict across both",
      withFixture(async ({ backend }, c) => {
        const op = { claimName: c, generationId: "g1", ttlMs: MINUTE, operationId: "op-1" };
        const [first] = await backend.batch([{ op: "acquire", ...op }]);
        const replayed = await backend.acquireClaim(op);
        expect(replayed.version).toBe(record(first).version);
        expect(replayed.fencingToken).toBe(record(first).fencingToken);
        const [conflict] = await backend.batch([{ op: "acquire", ...op, ttlMs: MINUTE + 1 }]);
        expect(conflict?.ok === false && conflict.error.code).toBe("operation_id_conflict");
        await expectCode(backend.acquireClaim({ ...op, generationId: "g2" }), "operation_id_conflict");
      }),
    );

    it(
      "refuses a malformed batch whole (no ops, over 128, a claim twice) and changes nothing",
      withFixture(async ({ backend }, c) => {
        const acquire = (claimName: string): BatchOp => ({
          op: "acquire",
          claimName,
          generationId: "g",
          ttlMs: MINUTE,
        });
        const cases: BatchOp[][] = [
          [],
          Array.from({ length: 129 }, (_, i) => acquire(`${c}-${i}`)),
          [acquire(c), acquire(`${c}-other`), acquire(c)],
        ];
        for (const ops of cases) {
          const err = await refusal(backend.batch(ops));
          expect([err.code, err.status]).toEqual(["invalid_request", 400]);
        }
        await expectCode(backend.getClaim(c), "claim_not_found");
        await expectCode(backend.getClaim(`${c}-0`), "claim_not_found");
        await expectCode(backend.getClaim(`${c}-other`), "claim_not_found");
      }),
    );
  });
}
