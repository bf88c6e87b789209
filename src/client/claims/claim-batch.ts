/**
 * The client's side of the batch route (docs/protocol.md#batch), shared by both claims backends: checking
 * and encoding a list of ops exactly as the batch route and each op's single route do, and
 * turning each op's answer into an outcome value.
 *
 * Guarantees:
 * - {@link checkBatch} refuses what the server refuses whole (0 or more than 128 ops, an
 *   unknown op, a claim twice) with the server's `invalid_request` and field, before
 *   anything is sent or run.
 * - {@link encodeOp} checks and encodes one op with its single route's declaration
 *   (`CLAIM_MUTATIONS[op]`): the claim name as the path parameter, the body with the
 *   route's codec (`bigint` → decimal string). An op the single call would refuse locally is
 *   refused the same way, so in a batch it becomes that op's outcome and the others go on.
 * - {@link outcomeOf} decodes one op's `{status, body}` with `decodeAnswer` and the op's own
 *   route: the record of a 2xx, else the {@link ShiftlockError} the single call would throw
 *   (`claim_held` with its decoded record). Only `ShiftlockError`s become outcomes; anything
 *   else is a bug and is rethrown.
 *
 * Does not: send anything, split lists longer than 128 (the handoff runtime chunks), or
 * retry (an outcome is final for this call; see the handoff's batch steps for retries).
 */
import { CLAIM_MUTATIONS, claimBatch } from "../../protocol/claim-routes.ts";
import type { BatchOpName } from "../../protocol/claims.ts";
import { ShiftlockError } from "../../protocol/errors.ts";
import { checkPathParams, decodeAnswer, encodeBody, type WireAnswer } from "../transport/route-codec.ts";
import type { BatchOp, BatchOutcome } from "./claims-backend.ts";

type Mutation = (typeof CLAIM_MUTATIONS)[BatchOpName];

/** One op, checked and in wire form: its route and its body without `op` and `claim`. */
export interface EncodedOp {
  op: BatchOpName;
  route: Mutation;
  claimName: string;
  /** The single route's wire body (counters as strings). */
  body: Record<string, unknown>;
}

/** Throw `invalid_request` (nothing sent) when the batch as a whole is malformed. */
export function checkBatch(ops: readonly BatchOp[]): void {
  encodeBody(claimBatch, { ops: ops.map((op) => ({ op: op.op, claim: op.claimName })) });
}

/** Check and encode one op as its single route would (throws that route's `invalid_request`). */
export function encodeOp(op: BatchOp): EncodedOp {
  const { op: name, claimName, ...body } = op;
  const route = CLAIM_MUTATIONS[name];
  checkPathParams(route, { claim: claimName });
  return { op: name, route, claimName, body: encodeBody(route, body) as Record<string, unknown> };
}

/** `fn`'s value, or its {@link ShiftlockError} as a refused outcome. */
export function settleOp<T>(fn: () => T): T | { ok: false; error: ShiftlockError } {
  try {
    return fn();
  } catch (err) {
    if (err instanceof ShiftlockError) return { ok: false, error: err };
    throw err;
  }
}

/** The outcome of one op's answer, decoded with the op's own route. */
export function outcomeOf(route: Mutation, answer: WireAnswer): BatchOutcome {
  return settleOp(() => ({ ok: true as const, claim: decodeAnswer<Mutation>(route, answer).claim }));
}
