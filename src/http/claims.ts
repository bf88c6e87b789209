/**
 * Claim routes (SPEC §3), mounted at `/v1/ns/:ns/claims`.
 *
 * Guarantees: input is validated (body size, JSON, schema, names, counters) before the
 * claim's Durable Object is addressed, so bad input changes nothing; every success is
 * `{"claim": ClaimRecord}` and every refusal the SPEC envelope. Handlers stay thin: the
 * object decides, the router only validates and forwards over RPC (the watch upgrade goes
 * through `stub.fetch`, as WebSockets must).
 *
 * Does not: authenticate (app.ts does it for every `/v1` route before reaching here).
 */
import { Hono } from "hono";
import type { Context } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { z } from "zod";
import {
  abortBodySchema,
  acquireBodySchema,
  claimWatchQuerySchema,
  commitBodySchema,
  prepareBodySchema,
  releaseBodySchema,
  renewBodySchema,
} from "../protocol/claims.ts";
import { ShiftlockError } from "../protocol/errors.ts";
import { WATCH_PARAMS } from "../claims/claim-object.ts";
import type { ClaimObject, ClaimRequest } from "../claims/claim-object.ts";
import type { WireResponse } from "../core/claim-response.ts";
import type { AppEnv } from "./app-env.ts";
import { offeredBearerSubprotocol } from "./auth.ts";
import { jsonBody, queryParams } from "./body.ts";
import { objectName } from "./object-names.ts";
import { nameParam } from "./params.ts";

export const claimRoutes = new Hono<AppEnv>();

/** GET of a claim takes no query parameters. */
const emptyQuery = z.strictObject({});

type ClaimContext = Context<AppEnv>;

function claimStub(c: ClaimContext): { name: string; stub: DurableObjectStub<ClaimObject> } {
  const name = nameParam(c, "claim");
  const ns = c.get("namespace");
  return { name, stub: c.env.CLAIMS.getByName(objectName(ns, "claim", name)) };
}

function send(c: ClaimContext, res: WireResponse): Response {
  return c.json(res.body, res.status as ContentfulStatusCode);
}

/** Register one mutation route: validate the name and body, then hand over to the object. */
function mutation<R extends ClaimRequest["route"]>(
  route: R,
  schema: z.ZodType<Extract<ClaimRequest, { route: R }>["body"]>,
): void {
  claimRoutes.post(`/:claim/${route}`, async (c) => {
    const { name, stub } = claimStub(c);
    const body = await jsonBody(c, schema);
    return send(c, await stub.command(name, { route, body } as ClaimRequest));
  });
}

mutation("acquire", acquireBodySchema);
mutation("renew", renewBodySchema);
mutation("transfer/prepare", prepareBodySchema);
mutation("transfer/commit", commitBodySchema);
mutation("transfer/abort", abortBodySchema);
mutation("release", releaseBodySchema);

claimRoutes.get("/:claim", async (c) => {
  const { name, stub } = claimStub(c);
  queryParams(c, emptyQuery);
  return send(c, await stub.get(name));
});

claimRoutes.get("/:claim/watch", async (c) => {
  const { name, stub } = claimStub(c);
  const { afterVersion } = queryParams(c, claimWatchQuerySchema);
  if (c.req.header("Upgrade")?.toLowerCase() !== "websocket") {
    throw new ShiftlockError("invalid_request", "watch needs a WebSocket upgrade (Upgrade: websocket)", {
      field: "Upgrade",
    });
  }
  const target = new URL("https://claim.internal/watch");
  target.searchParams.set(WATCH_PARAMS.name, name);
  if (afterVersion !== undefined) target.searchParams.set(WATCH_PARAMS.afterVersion, afterVersion.toString());
  const subprotocol = offeredBearerSubprotocol(c.req.header("Sec-WebSocket-Protocol"));
  if (subprotocol !== undefined) target.searchParams.set(WATCH_PARAMS.subprotocol, subprotocol);
  // Only the upgrade itself travels on; the token stays in the router.
  return stub.fetch(target.toString(), { headers: { Upgrade: "websocket" } });
});
