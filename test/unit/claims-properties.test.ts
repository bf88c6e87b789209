// Properties of the claims machine over random operation sequences with random time steps,
// with operation ids handled exactly as the Durable Object does (operations.ts helpers).
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { decideClaim, isHeld } from "../../src/core/claim-machine.ts";
import type { ClaimCommand } from "../../src/core/claim-machine.ts";
import { isRememberedStatus, replay, requestFingerprint } from "../../src/core/claim-operations.ts";
import type { OperationRecord } from "../../src/core/claim-operations.ts";
import { claimResultToResponse } from "../../src/core/claim-response.ts";
import type { ClaimRecord } from "../../src/protocol/claims.ts";

const GENS = ["a", "b", "c"] as const;

/** A command whose token is chosen relative to the current one (so some are right). */
type Op = {
  kind: "acquire" | "renew" | "prepare" | "commit" | "abort" | "release" | "get";
  gen: number;
  other: number;
  tokenDelta: -1 | 0 | 1;
  ttlMs: number;
  allowEmptyOnly: boolean;
  stepMs: number;
  /** Operation id from a small pool, so replays and conflicts happen. */
  opId: string | undefined;
};

const opArb: fc.Arbitrary<Op> = fc.record({
  kind: fc.constantFrom("acquire", "renew", "prepare", "commit", "abort", "release", "get"),
  gen: fc.integer({ min: 0, max: 2 }),
  other: fc.integer({ min: 0, max: 2 }),
  tokenDelta: fc.constantFrom(-1 as const, 0 as const, 0 as const, 0 as const, 1 as const),
  ttlMs: fc.constantFrom(100, 1_000, 5_000),
  allowEmptyOnly: fc.boolean(),
  stepMs: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 2_000 }), fc.integer({ min: 4_000, max: 7_000 })),
  opId: fc.option(fc.constantFrom("op1", "op2", "op3", "op4"), { nil: undefined }),
});

function toCommand(op: Op, record: ClaimRecord | undefined): ClaimCommand {
  const gen = GENS[op.gen]!;
  const other = GENS[op.other]!;
  const base = record?.fencingToken ?? 0n;
  const token = base + BigInt(op.tokenDelta) < 0n ? 0n : base + BigInt(op.tokenDelta);
  switch (op.kind) {
    case "acquire":
      return { kind: "acquire", generationId: gen, ttlMs: op.ttlMs, allowEmptyOnly: op.allowEmptyOnly };
    case "renew":
      return { kind: "renew", generationId: gen, token, ttlMs: op.ttlMs };
    case "prepare":
      return { kind: "prepare", fromGeneration: gen, toGeneration: other, token, ttlMs: op.ttlMs };
    case "commit":
      return { kind: "commit", fromGeneration: gen, toGeneration: other, expectedToken: token, ttlMs: op.ttlMs };
    case "abort":
      return { kind: "abort", fromGeneration: gen, toGeneration: other, expectedToken: token };
    case "release":
      return { kind: "release", generationId: gen, token };
    case "get":
      return { kind: "get" };
  }
}

describe("claims machine properties", () => {
  it("tokens, ownership, versions and replays stay sound over random histories", () => {
    fc.assert(
      fc.property(fc.array(opArb, { minLength: 1, maxLength: 60 }), (ops) => {
        let record: ClaimRecord | undefined;
        let now = 1_000_000;
        const operations = new Map<string, OperationRecord>();
        for (const op of ops) {
          now += op.stepMs;
          const command = toCommand(op, record);
          const fingerprint = requestFingerprint(command.kind, command);
          const known = op.opId === undefined || command.kind === "get" ? undefined : operations.get(op.opId);
          if (known !== undefined) {
            // A replay answers from the record alone: state is untouched by construction,
            // and the answer is the first response when the request is the same.
            const answer = replay(known, fingerprint);
            if (known.fingerprint === fingerprint) expect(answer).toEqual(known.response);
            else expect(answer).toMatchObject({ status: 409, body: { error: { code: "operation_id_conflict" } } });
            continue;
          }

          const before = record;
          const step = decideClaim("claim", before, command, now);
          const after = step.next;

          // Tokens never decrease, change by exactly +1, and only on acquire-of-unowned or commit.
          const t0 = before?.fencingToken ?? 0n;
          const t1 = after?.fencingToken ?? 0n;
          expect(t1 >= t0).toBe(true);
          expect(t1 - t0 <= 1n).toBe(true);
          expect(step.tokenAdvanced).toBe(t1 === t0 + 1n);
          if (step.tokenAdvanced) {
            expect(["acquire", "commit"]).toContain(command.kind);
            expect(step.events.at(-1)?.reason).toBe(command.kind === "acquire" ? "acquired" : "transfer_committed");
          }

          // At most one owner: an owner exactly when held; a reservation names a different successor.
          if (after !== undefined) {
            expect(after.ownerGeneration !== "").toBe(isHeld(after.phase));
            if (after.phase === "reserved") {
              expect(after.pendingSuccessor).not.toBe("");
              expect(after.pendingSuccessor).not.toBe(after.ownerGeneration);
            } else {
              expect(after.pendingSuccessor).toBe("");
            }
            if (isHeld(after.phase)) expect(after.fencingToken > 0n).toBe(true);
            // No held claim survives past its deadline once it was looked at.
            if (isHeld(after.phase)) expect(now <= after.expiresAtMs).toBe(true);
          }

          // Versions: strictly increase on a change, stay put otherwise; events are consecutive.
          const v0 = before?.version ?? 0n;
          const v1 = after?.version ?? 0n;
          if (step.changed) expect(v1 > v0).toBe(true);
          else {
            expect(v1).toBe(v0);
            expect(after).toEqual(before);
            expect(step.events).toEqual([]);
          }
          let last = v0;
          for (const e of step.events) {
            expect(e.claim.version > last).toBe(true);
            last = e.claim.version;
          }
          expect(last <= v1).toBe(true);

          // Remember the outcome the way the object does.
          const response = claimResultToResponse(step.result);
          if (op.opId !== undefined && command.kind !== "get" && isRememberedStatus(response.status)) {
            operations.set(op.opId, { operationId: op.opId, fingerprint, response, atMs: now });
          }
          record = after;
        }
      }),
      { numRuns: 500 },
    );
  });

  it("the fencing token orders owners: each new owner holds a strictly greater token", () => {
    fc.assert(
      fc.property(fc.array(opArb, { minLength: 1, maxLength: 80 }), (ops) => {
        let record: ClaimRecord | undefined;
        let now = 1_000_000;
        const tokenOfOwner: bigint[] = [];
        for (const op of ops) {
          now += op.stepMs;
          const step = decideClaim("claim", record, toCommand(op, record), now);
          const before = record;
          record = step.next;
          const ownerChanged =
            record !== undefined &&
            isHeld(record.phase) &&
            (before === undefined || !isHeld(before.phase) || before.ownerGeneration !== record.ownerGeneration);
          if (ownerChanged) tokenOfOwner.push(record!.fencingToken);
        }
        for (let i = 1; i < tokenOfOwner.length; i++) expect(tokenOfOwner[i]! > tokenOfOwner[i - 1]!).toBe(true);
      }),
      { numRuns: 500 },
    );
  });
});
