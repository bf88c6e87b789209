// A counting fake transport: a `fetch` that serves the declared claim and generation routes
// (the batch route included) from a MemoryClaimsBackend, so an HttpClaimsBackend — and the
// handoff runtime on top of it — runs in a unit test, and every HTTP request it makes is
// recorded (route and, for a batch, its ops). Watches and the lease channel are not served
// (the runtime's polls, commit results and HTTP keepalives do without them).
import type { BatchOp, BatchOutcome } from "../../src/client/claims/claims-backend.ts";
import type { MemoryClaimsBackend } from "../../src/client/claims/memory-claims-backend.ts";
import type { FetchLike } from "../../src/client/transport/http-transport.ts";
import { CLAIM_MUTATIONS, claimBatch, getClaim } from "../../src/protocol/claim-routes.ts";
import { claimRecordSchema, type BatchOpName } from "../../src/protocol/claims.ts";
import { ShiftlockError } from "../../src/protocol/errors.ts";
import {
  endGenerationLease,
  getGeneration,
  keepaliveGeneration,
  registerGeneration,
  updateGeneration,
} from "../../src/protocol/generation-routes.ts";
import type { RouteSpec } from "../../src/protocol/route.ts";
import { invalidFromZod } from "../../src/protocol/zod-invalid.ts";

/** One request the fake served. */
export interface ServedRequest {
  operationId: string;
  /** For a batch: each op's name, in order. */
  ops?: BatchOpName[];
}

type Params = Record<string, string>;
type Handler = (params: Params, body: Record<string, unknown>) => Promise<unknown>;

/** The error as the server renders it: `{status, body}` with the envelope (records on the wire). */
function errorAnswer(err: ShiftlockError): { status: number; body: unknown } {
  const details = { ...err.details };
  const holder = claimRecordSchema.safeEncode(details["claim"] as never);
  if (holder.success) details["claim"] = holder.data;
  return { status: err.status, body: new ShiftlockError(err.code, err.message, details).toEnvelope() };
}

/** The outcome of one op as the batch route renders it. */
function resultOf(outcome: BatchOutcome): { status: number; body: unknown } {
  if (!outcome.ok) return errorAnswer(outcome.error);
  return { status: 200, body: { claim: claimRecordSchema.encode(outcome.claim) } };
}

export interface MemoryServer {
  fetch: FetchLike;
  requests: ServedRequest[];
  /** Return true to apply the request but lose its answer (a network error instead). */
  loseAnswer?: (request: ServedRequest) => boolean;
}

export function memoryServer(memory: MemoryClaimsBackend): MemoryServer {
  const one = async (op: BatchOp): Promise<unknown> => {
    const [outcome] = await memory.batch([op]);
    if (!outcome!.ok) throw outcome!.error;
    return { claim: outcome!.claim };
  };
  const routes: [RouteSpec, Handler][] = [
    ...(Object.keys(CLAIM_MUTATIONS) as BatchOpName[]).map((op): [RouteSpec, Handler] => [
      CLAIM_MUTATIONS[op],
      (p, body) => one({ op, claimName: p["claim"]!, ...body } as BatchOp),
    ]),
    [getClaim, async (p) => ({ claim: await memory.getClaim(p["claim"]!) })],
    [
      claimBatch,
      async (_p, body) => {
        const ops = body["ops"] as { op: BatchOpName; claim: string }[];
        const outcomes = await Promise.all(
          ops.map(async ({ op, claim, ...rest }): Promise<BatchOutcome> => {
            const decoded = CLAIM_MUTATIONS[op].body.safeDecode(rest as never);
            if (!decoded.success) return { ok: false, error: invalidFromZod(decoded.error, "body") };
            const [outcome] = await memory.batch([{ op, claimName: claim, ...decoded.data } as BatchOp]);
            return outcome!;
          }),
        );
        return { results: outcomes.map(resultOf) };
      },
    ],
    [registerGeneration, async (_p, body) => ({ generation: await memory.registerGeneration(body as never) })],
    [getGeneration, async (p) => ({ generation: await memory.getGeneration(p["id"]!) })],
    [
      updateGeneration,
      async (p, body) => ({ generation: await memory.updateGeneration({ id: p["id"]!, ...body } as never) }),
    ],
    [
      keepaliveGeneration,
      async (p, body) => ({ generation: await memory.keepaliveGeneration({ id: p["id"]!, ...body } as never) }),
    ],
    [endGenerationLease, async (p) => ({ generation: await memory.endGenerationLease(p["id"]!) })],
  ];
  const matchers = routes.map(([route, handler]) => {
    const names: string[] = [];
    const pattern = route.path.replace(/\{([^}]+)\}/g, (_, name: string) => {
      names.push(name);
      return "([^/]+)";
    });
    return { route, handler, names, regex: new RegExp(`^${pattern}$`) };
  });

  const server: MemoryServer = {
    requests: [],
    fetch: async (input, init) => {
      const url = new URL(input);
      const method = init.method ?? "GET";
      const match = matchers.find((m) => m.route.method === method && m.regex.test(url.pathname));
      if (match === undefined) return Response.json(new ShiftlockError("not_found").toEnvelope(), { status: 404 });
      const values = match.regex.exec(url.pathname)!.slice(1).map(decodeURIComponent);
      const params = Object.fromEntries(match.names.map((n, i) => [n, values[i]!]));
      const json: unknown = typeof init.body === "string" ? JSON.parse(init.body) : undefined;
      const request: ServedRequest = { operationId: match.route.operationId };
      if (match.route === claimBatch) request.ops = (json as { ops: { op: BatchOpName }[] }).ops.map((o) => o.op);
      server.requests.push(request);
      let answer: { status: number; body: unknown };
      try {
        let decoded: Record<string, unknown> = {};
        if (match.route.body !== undefined) {
          const parsed = match.route.body.safeDecode(json);
          if (!parsed.success) throw invalidFromZod(parsed.error, "body");
          decoded = parsed.data as Record<string, unknown>;
        }
        const value = await match.handler(params, decoded);
        answer = { status: match.route.status, body: match.route.response!.encode(value) };
      } catch (err) {
        if (!(err instanceof ShiftlockError)) throw err;
        answer = errorAnswer(err);
      }
      if (server.loseAnswer?.(request) === true) throw new TypeError("fetch failed: connection reset");
      return Response.json(answer.body, { status: answer.status });
    },
  };
  return server;
}
