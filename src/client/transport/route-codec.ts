/**
 * The client's side of a route declaration (src/protocol/route.ts): checking and encoding
 * what a call sends, and decoding what comes back — for the HTTP transport and for the
 * in-memory backends alike.
 *
 * Guarantees:
 * - Path names are checked with the protocol's `nameProblem` (`invalid_request` whose
 *   `field` is the parameter's name, `namespace` for `{ns}`), except the route's opaque ids.
 * - Query and body are encoded with the route's own codecs (`schema.encode`: `bigint` →
 *   decimal string, unknown fields refused); a value the server would refuse is refused
 *   here as `invalid_request` naming the field, the same way the server names it.
 * - {@link decodeAnswer} is the only place an answer (`{status, body}`) becomes a value or
 *   an error: a 2xx body is decoded with `route.response` (a body that does not decode is
 *   `internal` "malformed response" — a server or proxy bug, never the caller's fault);
 *   204 and 101 give `undefined`; anything else is the {@link ShiftlockError} of the
 *   envelope, `claim_held`'s `details.claim` decoded to a `ClaimRecord`, and a
 *   `Retry-After` the transport saw in `details.retryAfterMs`.
 *
 * Does not: send anything (see http-transport.ts), or check what the schemas do not say
 * (e.g. that a scope has a store or a key: coord-scope.ts does).
 */
import type { z } from "zod";
import { claimRecordSchema } from "../../protocol/claims.ts";
import { ShiftlockError } from "../../protocol/errors.ts";
import { nameProblem } from "../../protocol/names.ts";
import type { RouteBody, RouteParams, RouteQuery, RouteResult, RouteSpec } from "../../protocol/route.ts";
import { pathParamNames } from "../../protocol/route.ts";
import { invalidFromZod } from "../../protocol/zod-invalid.ts";

/** Path parameters of a call: every `{param}` but the namespace, which the transport fills. */
export type CallParams<R extends RouteSpec> = Omit<RouteParams<R>, "ns">;

type ParamsPart<R extends RouteSpec> = [keyof CallParams<R>] extends [never]
  ? { params?: Record<string, never> }
  : { params: CallParams<R> };
type QueryPart<Q> = [Q] extends [undefined] ? { query?: undefined } : { query?: Q };
type BodyPart<B> = [B] extends [undefined] ? { body?: undefined } : { body: B };

/** What `call(route, input)` takes, derived from the declaration (required parts required). */
export type CallInput<R extends RouteSpec> = ParamsPart<R> & QueryPart<RouteQuery<R>> & BodyPart<RouteBody<R>>;

/** An answer as plain data: what HTTP delivered, or what an in-memory machine rendered. */
export interface WireAnswer {
  status: number;
  body: unknown;
  /** From a `Retry-After` header, when there was one. */
  retryAfterMs?: number | undefined;
}

/** Throw `invalid_request` naming the parameter unless every given path name is valid. */
export function checkPathParams(route: RouteSpec, params: Readonly<Record<string, string | undefined>>): void {
  const opaque = route.opaqueParams ?? [];
  for (const name of pathParamNames(route.path)) {
    const value = params[name];
    if (value === undefined || opaque.includes(name)) continue;
    const problem = nameProblem(value);
    const field = name === "ns" ? "namespace" : name;
    if (problem !== undefined) throw new ShiftlockError("invalid_request", `${field} ${problem}`, { field });
  }
}

/** The wire JSON of a request body (undefined when the route takes none). */
export function encodeBody(route: RouteSpec, body: unknown): unknown {
  if (route.body === undefined) return undefined;
  const encoded = route.body.safeEncode(body);
  if (!encoded.success) throw invalidFromZod(encoded.error, "body");
  return encoded.data;
}

/** The query string of a request, `?…` or `""`. */
export function encodeQuery(route: RouteSpec, query: unknown): string {
  if (route.query === undefined) return "";
  const schema: z.ZodType = route.query;
  const encoded = schema.safeEncode(query ?? {});
  if (!encoded.success) throw invalidFromZod(encoded.error, "query");
  const pairs: [string, string][] = [];
  for (const [key, value] of Object.entries(encoded.data as Record<string, unknown>)) {
    if (value === undefined) continue;
    if (typeof value !== "string" && typeof value !== "number" && typeof value !== "boolean") {
      throw new ShiftlockError("internal", `query parameter ${key} has no text form`);
    }
    pairs.push([key, String(value)]);
  }
  return pairs.length === 0 ? "" : `?${new URLSearchParams(pairs).toString()}`;
}

/** The value of a 2xx answer, or the error of any other (see the module doc). */
export function decodeAnswer<R extends RouteSpec>(route: R, answer: WireAnswer): RouteResult<R> {
  if (answer.status < 200 || answer.status >= 300) throw errorFromAnswer(answer);
  if (route.response === undefined || answer.status === 204 || answer.status === 101) {
    return undefined as RouteResult<R>;
  }
  const decoded = route.response.safeDecode(answer.body);
  if (!decoded.success) {
    const issue = decoded.error.issues[0];
    const where = issue === undefined || issue.path.length === 0 ? "body" : issue.path.map(String).join(".");
    throw new ShiftlockError(
      "internal",
      `malformed response (HTTP ${answer.status}) to ${route.operationId}: ${where}: ${issue?.message ?? "invalid"}`,
      { status: answer.status },
    );
  }
  return decoded.data as RouteResult<R>;
}

/** The error of a non-2xx answer, rebuilt from the error envelope. */
export function errorFromAnswer(answer: WireAnswer): ShiftlockError {
  const error = ShiftlockError.fromEnvelope(answer.body, answer.status);
  if (error.code === "claim_held" || error.code === "evicted") {
    // The holder's (or the evicted claim's) record, with bigint counters, so callers can inspect it on either backend.
    // `safeParse` is `safeDecode` for an input of unknown shape (it runs the codecs' decode).
    const holder = claimRecordSchema.safeParse(error.details["claim"]);
    if (holder.success) error.details["claim"] = holder.data;
  }
  if (answer.retryAfterMs !== undefined) error.details["retryAfterMs"] = answer.retryAfterMs;
  return error;
}
