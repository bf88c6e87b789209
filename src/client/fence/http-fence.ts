/**
 * HTTP: a Hono middleware for `Shiftlock-Fence: <key>=<token>`.
 *
 * Guarantees: a request without the header, or with one that is not `<key>=<canonical
 * token>`, is answered 400 `{"error":{"code":"invalid_request","field":"shiftlock-fence",…}}`
 * (when `allowKey` refuses the key too); a token below what `accepted(key)` reports is
 * answered 409 with {@link FenceRejected}'s body (`code: "fence_rejected"`, `key`,
 * `presented`, `accepted`); otherwise the handler runs with `c.get("fence")` =
 * `{ key, token }`. A `FenceRejected` thrown by the handler (its write lost the race to a
 * newer owner) is answered the same 409.
 *
 * Does not: make the write safe by itself. The header check is a fast early refusal; the
 * check that counts is the handler's write under one of the fences (`Fence`,
 * `fencedBatch`, `sqliteFenced`, `postgresFenced`, `fencedPut`), which is atomic with it.
 *
 * @example
 * app.post("/ledger", fenceMiddleware({ accepted: (key) => readFence(key) }), async (c) => {
 *   const { key, token } = c.get("fence");
 *   await fencedBatch(c.env.DB, key, token, [insert]);
 *   return c.body(null, 204);
 * });
 */
import { FENCE_HEADER, parseFenceHeader } from "./fence-key.ts";
import { FENCE_REJECTED_STATUS, FenceRejected, checkToken } from "./fence-rejected.ts";

/** What the middleware hands the handler. */
export interface RequestFence {
  readonly key: string;
  readonly token: bigint;
}

/** The Hono environment the middleware adds to: `new Hono<FenceVariables>()`, then `c.get("fence")`. */
export interface FenceVariables {
  Variables: { fence: RequestFence };
}

/**
 * What the middleware uses of Hono's `Context` (declared here so that the package's types
 * need no Hono installed; a `Context<FenceVariables>` is one).
 */
export interface FenceContext {
  readonly req: { header(name: string): string | undefined };
  set(key: "fence", value: RequestFence): void;
  json(body: unknown, status: 400): Response;
  readonly error: Error | undefined;
  res: Response;
}

/** A Hono middleware (`MiddlewareHandler<FenceVariables>`), typed without Hono. */
export type FenceMiddleware = (c: FenceContext, next: () => Promise<void>) => Promise<Response | undefined>;

export interface FenceMiddlewareOptions {
  /** The highest token the resource has accepted for `key` (undefined: none yet). */
  accepted: (key: string) => bigint | undefined | Promise<bigint | undefined>;
  /** Keys this route may be fenced by (default: any); others are answered 400. */
  allowKey?: (key: string) => boolean;
}

/** The middleware; see the module doc for its answers. */
export function fenceMiddleware(options: FenceMiddlewareOptions): FenceMiddleware {
  return async (c, next) => {
    const header = c.req.header(FENCE_HEADER);
    const fence = header === undefined ? undefined : parseFenceHeader(header);
    if (fence === undefined || (options.allowKey !== undefined && !options.allowKey(fence.key))) {
      const message =
        header === undefined
          ? `the ${FENCE_HEADER} header is required`
          : `${FENCE_HEADER} must be <fence key>=<token> with a key this route accepts`;
      return c.json({ error: { code: "invalid_request", message, field: FENCE_HEADER.toLowerCase() } }, 400);
    }
    try {
      checkToken(fence.key, fence.token, await options.accepted(fence.key));
    } catch (err) {
      if (err instanceof FenceRejected) return rejected(err);
      throw err;
    }
    c.set("fence", fence);
    await next();
    if (c.error instanceof FenceRejected) c.res = rejected(c.error);
    return undefined;
  };
}

/** The 409 answer for a refusal (also for an app's own `onError`). */
export function fenceRejectedResponse(err: FenceRejected): Response {
  return rejected(err);
}

function rejected(err: FenceRejected): Response {
  return Response.json(err.toJSON(), { status: FENCE_REJECTED_STATUS });
}
