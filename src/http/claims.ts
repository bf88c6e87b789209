/**
 * Claim routes (SPEC §3): the declared routes of protocol/claim-routes.ts mounted on the
 * claim's Durable Object.
 *
 * Guarantees: inputs arrive validated and decoded (mount.ts), so handlers only address the
 * object named `objectName(ns, "claim", claim)` and forward over RPC; the object's answer
 * (`{"claim": …}` or the SPEC envelope) is sent as it is. The watch upgrade goes through
 * `stub.fetch`, as WebSockets must, without the caller's token.
 *
 * Does not: authenticate (app.ts) or decide anything (the object does).
 */
import type { Hono } from "hono";
import type { ClaimObject, ClaimRequest } from "../claims/claim-object.ts";
import { WATCH_PARAMS } from "../claims/claim-object.ts";
import type { ClaimMutationName } from "../protocol/claim-routes.ts";
import { CLAIM_MUTATIONS, getClaim, watchClaim } from "../protocol/claim-routes.ts";
import type { AppEnv } from "./app-env.ts";
import type { AppContext } from "./mount.ts";
import { forwardWatch, mount } from "./mount.ts";
import { objectName } from "./object-names.ts";

/** The object's name for each mutation (kept: operation-id fingerprints are stored with it). */
export const OBJECT_ROUTE: Record<ClaimMutationName, ClaimRequest["route"]> = {
  acquire: "acquire",
  renew: "renew",
  prepare: "transfer/prepare",
  commit: "transfer/commit",
  abort: "transfer/abort",
  release: "release",
};

/** The Durable Object of claim `name` in the request's namespace. */
export function claimStub(c: AppContext, ns: string, name: string): DurableObjectStub<ClaimObject> {
  return c.env.CLAIMS.getByName(objectName(ns, "claim", name));
}

export function mountClaimRoutes(app: Hono<AppEnv>): void {
  for (const mutation of Object.keys(CLAIM_MUTATIONS) as ClaimMutationName[]) {
    mount(app, CLAIM_MUTATIONS[mutation], (c, { params, body }) =>
      claimStub(c, params.ns, params.claim).command(params.claim, {
        route: OBJECT_ROUTE[mutation],
        body,
      } as ClaimRequest),
    );
  }
  mount(app, getClaim, (c, { params }) => claimStub(c, params.ns, params.claim).get(params.claim));
  mount(app, watchClaim, (c, { params, query }) => {
    const internal: Record<string, string> = { [WATCH_PARAMS.name]: params.claim };
    if (query.afterVersion !== undefined) internal[WATCH_PARAMS.afterVersion] = query.afterVersion.toString();
    return forwardWatch(claimStub(c, params.ns, params.claim), internal);
  });
}
