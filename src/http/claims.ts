/**
 * Claim routes (docs/protocol.md#claims): the declared routes of protocol/claim-routes.ts mounted on the
 * claim's Durable Object.
 *
 * Guarantees: inputs arrive validated and decoded (mount.ts), so handlers only address the
 * object named `objectName(ns, "claim", claim)` and forward over RPC; the object's answer
 * (`{"claim": …}` or the error envelope) is sent as it is. The watch upgrade goes through
 * `stub.fetch`, as WebSockets must, without the caller's token. A batch (docs/protocol.md#batch) runs its
 * ops concurrently, each answered exactly as its single route would answer it.
 *
 * Does not: authenticate (app.ts) or decide anything (the object does).
 */
import type { Hono } from "hono";
import type { ClaimObject } from "../claims/claim-object.ts";
import { WATCH_PARAMS } from "../claims/claim-object.ts";
import type { ClaimMutationName, ClaimRequest } from "../protocol/claim-routes.ts";
import { CLAIM_MUTATIONS, claimBatch, evictClaim, getClaim, watchClaim } from "../protocol/claim-routes.ts";
import type { BatchBody } from "../protocol/claims.ts";
import { ShiftlockError } from "../protocol/errors.ts";
import { nameProblem } from "../protocol/names.ts";
import { invalidFromZod } from "../protocol/zod-invalid.ts";
import type { AppEnv } from "./app-env.ts";
import type { AppContext } from "./mount.ts";
import { errorAnswer, forwardWatch, mount } from "./mount.ts";
import type { WireResponse } from "../protocol/wire-response.ts";
import { objectName } from "../durable/object-names.ts";
import { callObject } from "./platform-errors.ts";
import { isLogged, logRequest } from "./request-log.ts";
import { mayRepeat } from "../protocol/route.ts";
import { systemClock } from "../core/clock.ts";

/** The Durable Object of claim `name` in the request's namespace. */
export function claimStub(c: AppContext, ns: string, name: string): DurableObjectStub<ClaimObject> {
  return c.env.CLAIMS.getByName(objectName(ns, "claim", name));
}

export function mountClaimRoutes(app: Hono<AppEnv>): void {
  for (const mutation of Object.keys(CLAIM_MUTATIONS) as ClaimMutationName[]) {
    mount(app, CLAIM_MUTATIONS[mutation], (c, { params, body }) =>
      claimStub(c, params.ns, params.claim).command(params.claim, { op: mutation, body } as ClaimRequest),
    );
  }
  mount(app, getClaim, (c, { params }) => claimStub(c, params.ns, params.claim).get(params.claim));
  mount(app, evictClaim, (c, { params, body }) => claimStub(c, params.ns, params.claim).evict(params.claim, body.note));
  mount(app, claimBatch, async (c, { params, body }) => {
    const results = await Promise.all(
      body.ops.map(async (op) => {
        const startedMs = systemClock.nowMs();
        const answer = await runBatchOp(c, params.ns, op);
        // One line per op, as its single route would have written (request-log.ts).
        if (isLogged(CLAIM_MUTATIONS[op.op], answer.status)) {
          const where = { namespace: params.ns, kind: "claim", name: op.claim };
          const caller = { tokenName: c.get("grant").name };
          logRequest(where, CLAIM_MUTATIONS[op.op].operationId, answer, systemClock.nowMs() - startedMs, caller);
        }
        return answer;
      }),
    );
    return { status: 200, body: { results } };
  });
  mount(app, watchClaim, (c, { params, query }) => {
    const internal: Record<string, string> = { [WATCH_PARAMS.name]: params.claim };
    if (query.afterVersion !== undefined) internal[WATCH_PARAMS.afterVersion] = query.afterVersion.toString();
    return forwardWatch(c, claimStub(c, params.ns, params.claim), internal);
  });
}

/**
 * One batch op (docs/protocol.md#batch): validated exactly as its single route validates its path name and
 * body, then sent to its claim's object; the answer is what that route would have answered.
 * A failure of one op is that op's result, never the batch's.
 */
async function runBatchOp(c: AppContext, ns: string, op: BatchBody["ops"][number]): Promise<WireResponse> {
  try {
    const { op: name, claim, ...rest } = op;
    const problem = nameProblem(claim);
    if (problem !== undefined) throw new ShiftlockError("invalid_request", `claim ${problem}`, { field: "claim" });
    const parsed = CLAIM_MUTATIONS[name].body.safeParse(rest);
    if (!parsed.success) throw invalidFromZod(parsed.error, "body");
    const request = { op: name, body: parsed.data } as ClaimRequest;
    // An overloaded object is this op's result, 503 `overloaded`, never the batch's (platform-errors.ts).
    return await callObject(mayRepeat(CLAIM_MUTATIONS[name], parsed.data), () =>
      claimStub(c, ns, claim).command(claim, request),
    );
  } catch (err) {
    if (err instanceof ShiftlockError) return errorAnswer(err);
    console.error("batch op failed", err);
    return errorAnswer(new ShiftlockError("internal"));
  }
}
