/**
 * One structured log line per mutation and per refused request (docs/operations.md): a
 * single `console.log` of one JSON object, which Workers Logs (`[observability]` in
 * wrangler.toml) indexes field by field.
 *
 * Guarantees:
 * - Fields: `namespace`, `kind` (claim, generation, scope, index), `name` (the claim name,
 *   generation id, or `volumeId/objectStoreId/key` of a scope), `operation` (the route's
 *   operationId), `status`, `outcome` (`ok` or the protocol's error code), `token` (a claim's
 *   fencing token) or `epoch` (a lease's), `version` (a claim's record version) when the
 *   answer carries them, `durationMs`, and `tokenName`: the configured name of the token that
 *   called (src/http/auth.ts; absent when no token was accepted). An eviction's line also
 *   carries the operator's `note`.
 * - Never a secret: no bearer token nor anything derived from one (the token's configured
 *   name stands for it), no Authorization header, no lease id (a lease id lets its holder
 *   keep the lease alive), no request body beyond an eviction's note.
 * - Successful reads are not logged (they change nothing), nor successful heartbeats (a claim's
 *   renew, a lease's keepalive: they only move a deadline, and at a few a minute per holder
 *   they would be most of the lines); every other write and every refusal is.
 *
 * Does not: count anything (the objects' outboxes do) or sample.
 */
import type { WireResponse } from "../protocol/wire-response.ts";
import type { RouteSpec } from "../protocol/route.ts";

const KIND: Record<RouteSpec["tag"], string> = {
  meta: "meta",
  claims: "claim",
  generations: "generation",
  coord: "scope",
  listing: "index",
  watch: "ticket",
};

/** One log line, as written. */
export interface RequestLogLine {
  namespace: string;
  kind: string;
  name: string;
  operation: string;
  status: number;
  outcome: string;
  token?: string;
  epoch?: string;
  version?: string;
  durationMs: number;
  tokenName?: string;
  note?: string;
}

/** Who called and, for an eviction, why: the fields a line adds beyond the answer. */
export interface RequestCaller {
  /** The accepted token's name (undefined before authentication). */
  tokenName?: string | undefined;
  /** An eviction's note. */
  note?: string | undefined;
}

/** What the request addressed, from its decoded path parameters (and a registration's body). */
export function addressed(
  route: RouteSpec,
  params: Readonly<Record<string, string>>,
  body?: unknown,
): { namespace: string; kind: string; name: string } {
  const kind = KIND[route.tag];
  let name = params["claim"] ?? params["id"] ?? "";
  if (route.tag === "coord") name = [params["volumeId"], params["objectStoreId"] ?? "", params["key"] ?? ""].join("/");
  if (name === "" && typeof (body as { id?: unknown } | undefined)?.id === "string") name = (body as { id: string }).id;
  return { namespace: params["ns"] ?? "", kind, name };
}

/** True when this answer gets a line: every write but a heartbeat's success, every refusal. */
export function isLogged(route: RouteSpec, status: number): boolean {
  if (status >= 400) return true;
  return (route.role === "write" || route.role === "admin") && route.heartbeat !== true;
}

/** Write the line of one answered request. */
export function logRequest(
  where: { namespace: string; kind: string; name: string },
  operation: string,
  answer: WireResponse,
  durationMs: number,
  caller: RequestCaller = {},
): void {
  const body = answer.body as {
    claim?: { fencingToken?: unknown; version?: unknown };
    lease?: { epoch?: unknown };
    error?: { code?: unknown; claim?: { fencingToken?: unknown; version?: unknown } };
  } | null;
  const claim = body?.claim ?? body?.error?.claim;
  const line: RequestLogLine = {
    ...where,
    operation,
    status: answer.status,
    outcome: typeof body?.error?.code === "string" ? body.error.code : "ok",
    durationMs,
  };
  if (typeof claim?.fencingToken === "string") line.token = claim.fencingToken;
  if (typeof claim?.version === "string") line.version = claim.version;
  if (typeof body?.lease?.epoch === "string") line.epoch = body.lease.epoch;
  if (caller.tokenName !== undefined) line.tokenName = caller.tokenName;
  if (caller.note !== undefined) line.note = caller.note;
  // The one place shiftlock writes to stdout: one JSON object per line.
  // eslint-disable-next-line no-console
  console.log(JSON.stringify(line));
}
