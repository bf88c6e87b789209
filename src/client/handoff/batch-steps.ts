/**
 * One step of a handoff (prepare, commit or abort of every claim) as batch requests
 * (docs/protocol.md#operating-at-scale): every op of the step goes out at once, so a step costs one round trip
 * whatever the number of claims.
 *
 * Guarantees:
 * - Ops are sent in chunks of at most {@link BATCH_MAX_OPS} (the route's limit), all chunks
 *   at once: up to 128 claims a step is exactly one request; 129–256 two; and so on.
 * - Each op settles to an outcome, in input order: the record, or the error its single
 *   call would have thrown — a refusal of that op, or a failure of its whole request.
 * - Only failures the client's one retry rule retries (transport/retry-policy.ts: no answer,
 *   `overloaded`, `rate_limited`) of ops carrying an operation id are retried, per op, until
 *   that op's `untilMs` on the clock: the ops still pending go out together again after the
 *   rule's backoff (never sooner than a `Retry-After`), with their own operation ids, so an
 *   op whose answer was lost is applied once. A refusal is final at once.
 * - `signal` aborting ends every pending op with the signal's reason.
 * - {@link runStepWithFallback} sends the ops whose outcome the caller turns into another op
 *   once more, together (one more round trip whatever their number); their second outcome
 *   is their outcome.
 *
 * Does not: decide what an outcome means for a lease (handoff.ts does), or order ops
 * across chunks (they are independent on the server anyway).
 */
import { type Clock, sleepLinked } from "../../core/clock.ts";
import { BATCH_MAX_OPS } from "../../protocol/claims.ts";
import type { BatchOp, ClaimRecord, ClaimsBackend } from "../claims/claims-backend.ts";
import { callBackoff, isRetryable, retryAfterMsOf } from "../transport/retry-policy.ts";

/** One op of a step and the clock time after which a transient failure is final. */
export interface StepOp {
  op: BatchOp;
  untilMs: number;
}

/** An op's final outcome (`error` may be a whole request's failure, e.g. the abort reason). */
export type StepOutcome = { ok: true; claim: ClaimRecord } | { ok: false; error: Error };

/** `items` cut into consecutive chunks of at most `size`. */
export function chunks<T>(items: readonly T[], size = BATCH_MAX_OPS): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

function failureOf(outcome: StepOutcome | undefined): unknown {
  return outcome?.ok === false ? outcome.error : undefined;
}

function asError(err: unknown): Error {
  return err instanceof Error ? err : new Error(String(err));
}

/** Run every op of a step in batch requests (see the module doc). */
export async function runStep(
  backend: ClaimsBackend,
  clock: Clock,
  ops: readonly StepOp[],
  signal?: AbortSignal,
): Promise<StepOutcome[]> {
  const outcomes: StepOutcome[] = new Array<StepOutcome>(ops.length);
  const backoff = callBackoff();
  let pending = ops.map((_, i) => i);
  while (pending.length > 0) {
    const retry: number[] = [];
    const settle = (i: number, outcome: StepOutcome): void => {
      outcomes[i] = outcome;
      const again =
        !outcome.ok &&
        ops[i]!.op.operationId !== undefined &&
        isRetryable(outcome.error) &&
        signal?.aborted !== true &&
        clock.nowMs() < ops[i]!.untilMs;
      if (again) retry.push(i);
    };
    await Promise.all(
      chunks(pending).map(async (chunk) => {
        try {
          const answers = await backend.batch(
            chunk.map((i) => ops[i]!.op),
            { signal },
          );
          chunk.forEach((i, j) => settle(i, answers[j]!));
        } catch (err) {
          for (const i of chunk) settle(i, { ok: false, error: asError(err) });
        }
      }),
    );
    if (retry.length === 0) break;
    const serverAsks = Math.max(...retry.map((i) => retryAfterMsOf(failureOf(outcomes[i]))));
    const waitMs = Math.min(Math.max(backoff.next(), serverAsks), ...retry.map((i) => ops[i]!.untilMs - clock.nowMs()));
    try {
      await sleepLinked(clock, Math.max(0, waitMs), signal);
    } catch (err) {
      for (const i of retry) outcomes[i] = { ok: false, error: asError(err) };
      break;
    }
    pending = retry.sort((a, b) => a - b);
  }
  return outcomes;
}

/**
 * {@link runStep}, then once more for the ops `retryAs` turns into another op given their
 * outcome (the handoff sends a bound op the successor refused `no_lease` again unbound).
 */
export async function runStepWithFallback(
  backend: ClaimsBackend,
  clock: Clock,
  ops: readonly StepOp[],
  retryAs: (index: number, outcome: StepOutcome) => StepOp | undefined,
  signal?: AbortSignal,
): Promise<StepOutcome[]> {
  const outcomes = await runStep(backend, clock, ops, signal);
  const again = outcomes.flatMap((outcome, i) => {
    const op = retryAs(i, outcome);
    return op === undefined ? [] : [{ i, op }];
  });
  if (again.length === 0) return outcomes;
  const second = await runStep(
    backend,
    clock,
    again.map((a) => a.op),
    signal,
  );
  again.forEach(({ i }, j) => (outcomes[i] = second[j]!));
  return outcomes;
}
