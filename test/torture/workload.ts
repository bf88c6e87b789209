/**
 * The torture clients: each one loops over random operations on a small key space (a few
 * claims, generations and scopes) so that clients collide, and records every operation.
 *
 * Guarantees:
 * - Every request is well-formed: refusals come from the rules, not from validation.
 * - Every claim mutation carries a fresh operationId; an ambiguous one (`unknown`) is
 *   sometimes retried with the same operationId and body, recorded with `retryOf`.
 * - Arguments are drawn from what the clients last saw (tokens, owners, lease ids), mostly
 *   right and sometimes stale, so both successes and refusals happen; ttls are short
 *   ({@link CLAIM_TTL_MS}, {@link LEASE_TTL_MS}) so expiry happens, and no deadline a client
 *   sets lies more than {@link LONGEST_DEADLINE_MS} after its call completed.
 * - A client passes the run's {@link Gate} before each step (quiet.ts): while a quiet point
 *   holds it closed, the client starts nothing.
 *
 * Does not: wait for anything but its own calls and the gate (faults run beside it, see faults.ts).
 */
import { CLAIM_MUTATIONS, claimBatch, getClaim } from "../../src/protocol/claim-routes.ts";
import { getGeneration, registerGeneration, updateGeneration } from "../../src/protocol/generation-routes.ts";
import { SCOPE_ROUTE_FAMILIES } from "../../src/protocol/scope-routes.ts";
import type { HistoryWriter, OpRoute, Outcome } from "./history.ts";
import type { Gate } from "./quiet.ts";
import type { Rng } from "./rng.ts";
import { perform, type Call } from "./wire.ts";

const SCOPE = SCOPE_ROUTE_FAMILIES.store;
const GENERATION_STATES = ["standby", "preparing", "active", "draining", "transferring", "retired", "failed"];
const CLAIM_VERBS = ["acquire", "renew", "release", "prepare", "commit", "abort"] as const;
export type ClaimVerb = (typeof CLAIM_VERBS)[number];

/** Claim ttls the clients ask for (ms). */
export const CLAIM_TTL_MS = { min: 200, max: 1_500 } as const;
/** Coord lease ttls the clients ask for (grants and keepalives, ms). */
export const LEASE_TTL_MS = { min: 300, max: 2_000 } as const;
/** How long a waiting lease acquire waits at most (ms). */
export const WAIT_MS = { min: 200, max: 1_500 } as const;
/**
 * No deadline a client sets (claim or lease expiry, a queued wait's end, a session's lease:
 * sessions.ts) lies further than this after its call completed: once the clients are stopped
 * this long, nothing they did holds anything — but a claim bound to a session's lease, which
 * a restart of its generation may keep up to two ttls longer (docs/generations.md).
 */
export const LONGEST_DEADLINE_MS = Math.max(CLAIM_TTL_MS.max, LEASE_TTL_MS.max, WAIT_MS.max);

/** The key space every client draws from. */
export interface KeySpace {
  namespace: string;
  claims: string[];
  generations: string[];
  /** `volume/store`. */
  scopes: string[];
}

/** The key space for `clients` clients: about four clients per claim, so they collide. */
export function keySpace(namespace: string, clients: number): KeySpace {
  const count = (n: number): number => Math.max(2, Math.ceil(clients / n));
  return {
    namespace,
    claims: Array.from({ length: count(4) }, (_, i) => `c${i}`),
    generations: Array.from({ length: Math.min(8, count(3) + 2) }, (_, i) => `g${i}`),
    scopes: Array.from({ length: count(12) }, (_, i) => `v/s${i}`),
  };
}

/** What clients last saw, shared (as if they gossiped): where arguments come from. */
export class Knowledge {
  readonly claims = new Map<string, { owner: string; token: string; pending: string }>();
  readonly leases = new Map<string, string[]>();
  readonly generations = new Map<string, string>();
  /** Scopes some lease was granted on (an answered grant): such a scope must be listed. */
  readonly granted = new Set<string>();
  /** The generations the sessions register and lease (sessions.ts). */
  readonly sessionGenerations: string[] = [];
  /** Registry rounds: generations end in final states, so fresh ids appear every 300 calls. */
  private registryCalls = 0;

  /** A registry generation id: `g<i>.<round>`. */
  registryId(base: string): string {
    return `${base}.${Math.floor(this.registryCalls++ / 300)}`;
  }

  /** Every registry id handed out so far, of the bases `bases` (what the run may have created). */
  registryIds(bases: readonly string[]): string[] {
    const rounds = this.registryCalls === 0 ? 0 : Math.floor((this.registryCalls - 1) / 300) + 1;
    return bases.flatMap((base) => Array.from({ length: rounds }, (_, round) => `${base}.${round}`));
  }

  /** Remember a granted lease of `scope`. */
  learnGrant(scope: string, leaseId: string): void {
    this.granted.add(scope);
    this.leases.set(scope, [...(this.leases.get(scope) ?? []), leaseId].slice(-4));
  }

  learnClaim(body: unknown): void {
    const claim = (
      body as { claim?: { name: string; ownerGeneration: string; fencingToken: string; pendingSuccessor: string } }
    )?.claim;
    if (claim === undefined || claim === null) return;
    this.claims.set(claim.name, {
      owner: claim.ownerGeneration,
      token: claim.fencingToken,
      pending: claim.pendingSuccessor,
    });
  }
}

export interface ClientContext {
  id: number;
  rng: Rng;
  baseUrl: () => string;
  history: HistoryWriter;
  keys: KeySpace;
  knowledge: Knowledge;
  /** Client-side timeout of one call (ms). */
  timeoutMs: number;
  /** Passed before each step; closed at quiet points. */
  gate: Gate;
  stopped: () => boolean;
  /** Called once per recorded operation. */
  onOp: (outcome: Outcome) => void;
}

/** Run one client until `stopped()`. */
export async function runClient(ctx: ClientContext): Promise<void> {
  let opSeq = 0;
  const opId = (): string => `op-${ctx.id}-${opSeq++}`;
  while (!ctx.stopped()) {
    await ctx.gate.enter();
    try {
      if (ctx.stopped()) return;
      await step(ctx, opId);
    } finally {
      ctx.gate.leave();
    }
    await new Promise((r) => setTimeout(r, ctx.rng.int(0, 20)));
  }
}

async function step(ctx: ClientContext, opId: () => string): Promise<void> {
  const { rng } = ctx;
  const roll = rng.next();
  if (roll < 0.5) return claimMutation(ctx, rng.pick(CLAIM_VERBS), rng.pick(ctx.keys.claims), opId);
  if (roll < 0.56) return claimRead(ctx);
  if (roll < 0.62) return batch(ctx, opId);
  if (roll < 0.68) return generation(ctx);
  return coord(ctx);
}

/** Record one call. Returns the outcome. */
export async function record(
  ctx: ClientContext,
  route: OpRoute,
  target: string,
  call: Call,
  extra: { leaseId?: string; retryOf?: number; timeoutMs?: number } = {},
): Promise<{ id: number; outcome: Outcome }> {
  const id = ctx.history.newId();
  const invokeMs = Date.now();
  const outcome = await perform(ctx.baseUrl(), call, extra.timeoutMs ?? ctx.timeoutMs);
  ctx.history.write({
    t: "op",
    id,
    client: ctx.id,
    route,
    target,
    ...(extra.leaseId === undefined ? {} : { leaseId: extra.leaseId }),
    request: call.body,
    invokeMs,
    completeMs: Date.now(),
    outcome,
    ...(extra.retryOf === undefined ? {} : { retryOf: extra.retryOf }),
  });
  ctx.onOp(outcome);
  // Nobody listens (the server is restarting): do not spin, it slows the restart down.
  if (outcome.type === "error" && outcome.code === "unavailable") await new Promise((r) => setTimeout(r, 500));
  return { id, outcome };
}

/** A request body for claim mutation `verb`, from what the clients know. */
function claimBody(ctx: ClientContext, verb: ClaimVerb, claim: string, operationId: string): Record<string, unknown> {
  const { rng, keys } = ctx;
  const known = ctx.knowledge.claims.get(claim) ?? { owner: "", token: "0", pending: "" };
  const gen = (): string => (known.owner !== "" && rng.chance(0.75) ? known.owner : rng.pick(keys.generations));
  const token = (): string =>
    rng.chance(0.85) || known.token === "0" ? known.token : String(BigInt(known.token) - 1n);
  const ttlMs = rng.int(CLAIM_TTL_MS.min, CLAIM_TTL_MS.max);
  const other = (from: string): string => {
    const to =
      known.pending !== "" && known.pending !== from && rng.chance(0.7) ? known.pending : rng.pick(keys.generations);
    return to === from ? `${from}x` : to;
  };
  switch (verb) {
    case "acquire":
      return {
        generationId: rng.chance(0.3) && known.owner !== "" ? known.owner : rng.pick(keys.generations),
        ttlMs,
        ...(rng.chance(0.1) ? { allowEmptyOnly: true } : {}),
        operationId,
      };
    case "renew":
      return { generationId: gen(), token: token(), ttlMs, operationId };
    case "release":
      return { generationId: gen(), token: token(), operationId };
    case "prepare": {
      const from = gen();
      return { fromGeneration: from, toGeneration: other(from), token: token(), ttlMs, operationId };
    }
    case "commit": {
      const from = gen();
      return { fromGeneration: from, toGeneration: other(from), expectedToken: token(), ttlMs, operationId };
    }
    case "abort": {
      const from = gen();
      return { fromGeneration: from, toGeneration: other(from), expectedToken: token(), operationId };
    }
  }
}

async function claimMutation(ctx: ClientContext, verb: ClaimVerb, claim: string, opId: () => string): Promise<void> {
  await sendClaimMutation(ctx, verb, claim, claimBody(ctx, verb, claim, opId()));
}

/**
 * Send claim mutation `verb` with `body` (which carries its operationId), retrying an
 * ambiguous one with the same operationId (at most twice), and learn the answer.
 */
export async function sendClaimMutation(
  ctx: ClientContext,
  verb: ClaimVerb,
  claim: string,
  body: Record<string, unknown>,
): Promise<void> {
  const call: Call = {
    method: "POST",
    path: CLAIM_MUTATIONS[verb].path,
    params: { ns: ctx.keys.namespace, claim },
    body,
  };
  const answered = await record(ctx, verb, claim, call);
  const first = answered.id;
  let outcome = answered.outcome;
  // An ambiguous mutation is sometimes retried with the same operationId (at most twice).
  for (let attempt = 0; outcome.type === "unknown" && attempt < 2 && ctx.rng.chance(0.6); attempt++) {
    if (ctx.stopped()) return;
    await new Promise((r) => setTimeout(r, ctx.rng.int(50, 500)));
    ({ outcome } = await record(ctx, verb, claim, call, { retryOf: first }));
  }
  if (outcome.type === "ok") ctx.knowledge.learnClaim(outcome.body);
  if (outcome.type === "error")
    ctx.knowledge.learnClaim(outcome.body === null ? undefined : (outcome.body as { error?: unknown }).error);
}

async function claimRead(ctx: ClientContext): Promise<void> {
  const claim = ctx.rng.pick(ctx.keys.claims);
  const { outcome } = await record(ctx, "get", claim, {
    method: "GET",
    path: getClaim.path,
    params: { ns: ctx.keys.namespace, claim },
  });
  if (outcome.type === "ok") ctx.knowledge.learnClaim(outcome.body);
}

async function batch(ctx: ClientContext, opId: () => string): Promise<void> {
  const { rng } = ctx;
  const claims = [...ctx.keys.claims]
    .sort(() => rng.next() - 0.5)
    .slice(0, rng.int(2, Math.min(4, ctx.keys.claims.length)));
  const ops = claims.map((claim) => {
    const verb = rng.pick(CLAIM_VERBS);
    return { op: verb, claim, ...claimBody(ctx, verb, claim, opId()) };
  });
  const { outcome } = await record(ctx, "batch", "", {
    method: "POST",
    path: claimBatch.path,
    params: { ns: ctx.keys.namespace },
    body: { ops },
  });
  if (outcome.type !== "ok") return;
  for (const result of (outcome.body as { results: { status: number; body: unknown }[] }).results) {
    if (result.status === 200) ctx.knowledge.learnClaim(result.body);
  }
}

async function generation(ctx: ClientContext): Promise<void> {
  const { rng } = ctx;
  const id = ctx.knowledge.registryId(rng.pick(ctx.keys.generations));
  const ns = ctx.keys.namespace;
  const roll = rng.next();
  if (roll < 0.35) {
    await record(ctx, "registerGeneration", id, {
      method: "POST",
      path: registerGeneration.path,
      params: { ns },
      body: { id, service: "torture", instanceId: rng.chance(0.05) ? "intruder" : `i-${id}` },
    });
  } else if (roll < 0.75) {
    await record(ctx, "updateGeneration", id, {
      method: "PATCH",
      path: updateGeneration.path,
      params: { ns, id },
      body: { state: rng.pick(GENERATION_STATES), reason: `client ${ctx.id}` },
    });
  } else {
    await record(ctx, "getGeneration", id, { method: "GET", path: getGeneration.path, params: { ns, id } });
  }
}

async function coord(ctx: ClientContext): Promise<void> {
  const { rng } = ctx;
  const scope = rng.pick(ctx.keys.scopes);
  const [volumeId = "", objectStoreId = ""] = scope.split("/");
  const params = { ns: ctx.keys.namespace, volumeId, objectStoreId };
  const held = ctx.knowledge.leases.get(scope) ?? [];
  const leaseId = held.length > 0 && rng.chance(0.9) ? rng.pick(held) : `unknown-${rng.int(0, 9)}`;
  const roll = rng.next();
  if (roll < 0.3) {
    const wait = rng.chance(0.4);
    const waitMs = rng.int(WAIT_MS.min, WAIT_MS.max);
    const body = {
      participantId: `p${ctx.id}`,
      ttlMs: rng.int(LEASE_TTL_MS.min, LEASE_TTL_MS.max),
      ...(wait ? { waitMs, waiterId: `w-${ctx.id}-${ctx.history.newId()}` } : {}),
    };
    const { outcome } = await record(
      ctx,
      wait ? "leaseWait" : "leaseTry",
      scope,
      { method: "POST", path: SCOPE.acquire.path, params, body },
      { timeoutMs: ctx.timeoutMs + (wait ? waitMs : 0) },
    );
    if (outcome.type === "ok")
      ctx.knowledge.learnGrant(scope, (outcome.body as { lease: { leaseId: string } }).lease.leaseId);
  } else if (roll < 0.5) {
    await record(
      ctx,
      "keepalive",
      scope,
      {
        method: "POST",
        path: SCOPE.keepalive.path,
        params: { ...params, leaseId },
        body: { ttlMs: rng.int(LEASE_TTL_MS.min, LEASE_TTL_MS.max) },
      },
      { leaseId },
    );
  } else if (roll < 0.75) {
    const current = ctx.knowledge.generations.get(scope);
    const body = {
      ...(current !== undefined && rng.chance(0.5) ? { expectedGeneration: current } : {}),
      ...(current !== undefined && rng.chance(0.1) ? { generation: String(BigInt(current) + 3n) } : {}),
      ...(rng.chance(0.8) ? { root: { by: ctx.id, n: ctx.history.newId() } } : {}),
    };
    const { outcome } = await record(
      ctx,
      "publish",
      scope,
      { method: "POST", path: SCOPE.publish.path, params: { ...params, leaseId }, body },
      { leaseId },
    );
    if (outcome.type === "ok")
      ctx.knowledge.generations.set(scope, (outcome.body as { generation: string }).generation);
  } else if (roll < 0.87) {
    await record(
      ctx,
      "leaseRelease",
      scope,
      { method: "DELETE", path: SCOPE.release.path, params: { ...params, leaseId } },
      { leaseId },
    );
    ctx.knowledge.leases.set(
      scope,
      held.filter((l) => l !== leaseId),
    );
  } else {
    const { outcome } = await record(ctx, "snapshot", scope, { method: "GET", path: SCOPE.snapshot.path, params });
    if (outcome.type === "ok")
      ctx.knowledge.generations.set(scope, (outcome.body as { generation: string }).generation);
  }
}
