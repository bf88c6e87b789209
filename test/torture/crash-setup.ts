/**
 * What a lapse crash leaves behind (faults.ts): with the clients stopped and everything they
 * held lapsed, one more client takes every object that has a deadline, with the ttl the
 * fault chose, so that the crash leaves deadlines to fall due while the server is down or
 * just as it comes back:
 * - every claim acquired by a generation of the key space and, every other one, a transfer
 *   prepared to another (`reserved` → successor, the lease running on the reservation);
 *   when the run has sessions, the claims in between are instead bound to a session
 *   generation's fresh lease epoch (its lease is ended first, then kept once with a lease
 *   ttl of its own, 500–2,000 ms), which either runs out on its own or is ended
 *   (`lease/end`) just before the kill ({@link HeldForCrash.endBound}): its generation
 *   dies between ending the epoch and delivering the end, and the judge after the restart,
 *   with nobody contending, sees whether the end still reached the claims;
 * - every scope's lease granted, and a waiting acquire queued behind it, still waiting when
 *   the server dies (queued waiters live in the instance: after the restart nobody wants the
 *   lock, whatever the listing last heard).
 *
 * Guarantees: every call is recorded as a client's (workload.ts `record`, client `ctx.id`,
 * fresh operation ids), so every checker judges these calls like any other; the waits left
 * in flight are returned, to be awaited once the crash ended them (ambiguous).
 *
 * Does not: kill anything (faults.ts does) or wait for the listing.
 */
import { CLAIM_MUTATIONS } from "../../src/protocol/claim-routes.ts";
import { SCOPE_ROUTE_FAMILIES } from "../../src/protocol/scope-routes.ts";
import { keepaliveCall, leaseEndCall } from "./sessions.ts";
import { LEASE_TTL_MS, record, type ClientContext } from "./workload.ts";

/** How long the queued acquire asks to wait: far longer than any crash takes to come. */
const QUEUED_WAIT_MS = 60_000;

export interface HeldForCrash {
  /** The waiting acquires still in flight (they end with the crash). */
  waits: Promise<unknown>[];
  /** The latest deadline any of these calls may have set (epoch ms). */
  lastDeadlineMs: number;
  /** Claims bound to a session lease: its ttl and deadline, and whether to end it just before the kill. */
  bound?: { ttlMs: number; deadlineMs: number; endBeforeKill: boolean };
  /** End the bound claims' lease (`lease/end`), recorded; call it right before the kill. */
  endBound?: () => Promise<void>;
}

/** The ttl of the session lease the bound claims hold (ms). */
const BOUND_TTL_MS = { min: 500, max: 2_000 } as const;

/** Take every claim and scope of the key space for `ttlMs` (see the module comment). */
export async function holdEverything(ctx: ClientContext, ttlMs: number): Promise<HeldForCrash> {
  const { rng, keys } = ctx;
  const ns = keys.namespace;
  const operationId = (): string => `op-${ctx.id}-${ctx.history.newId()}`;
  let lastDeadlineMs = 0;
  /** A call that asked for `ttlMs` just completed: the server set its deadline before now. */
  const held = (): void => {
    lastDeadlineMs = Math.max(lastDeadlineMs, Date.now() + ttlMs);
  };
  const session = ctx.knowledge.sessionGenerations.length === 0 ? undefined : await freshLease(ctx);
  for (const [i, claim] of keys.claims.entries()) {
    const owner = rng.pick(keys.generations);
    const call = (verb: "acquire" | "prepare", body: Record<string, unknown>) => ({
      method: "POST" as const,
      path: CLAIM_MUTATIONS[verb].path,
      params: { ns, claim },
      body: { ...body, operationId: operationId() },
    });
    if (session !== undefined && i % 2 === 1) {
      const bound = await record(
        ctx,
        "acquire",
        claim,
        call("acquire", { generationId: session.generation, bound: true }),
      );
      if (bound.outcome.type === "ok") ctx.knowledge.learnClaim(bound.outcome.body);
      continue;
    }
    const acquired = await record(ctx, "acquire", claim, call("acquire", { generationId: owner, ttlMs }));
    held();
    const answer = acquired.outcome.type === "ok" ? acquired.outcome.body : undefined;
    ctx.knowledge.learnClaim(answer);
    const token = (answer as { claim?: { fencingToken: string } } | undefined)?.claim?.fencingToken;
    if (token === undefined || i % 2 === 1) continue;
    const successor = keys.generations.find((g) => g !== owner) ?? `${owner}x`;
    const prepared = await record(
      ctx,
      "prepare",
      claim,
      call("prepare", { fromGeneration: owner, toGeneration: successor, token, ttlMs }),
    );
    held();
    if (prepared.outcome.type === "ok") ctx.knowledge.learnClaim(prepared.outcome.body);
  }
  const waits: Promise<unknown>[] = [];
  const scopeRoutes = SCOPE_ROUTE_FAMILIES.store;
  for (const scope of keys.scopes) {
    const [volumeId = "", objectStoreId = ""] = scope.split("/");
    const params = { ns, volumeId, objectStoreId };
    const granted = await record(ctx, "leaseTry", scope, {
      method: "POST",
      path: scopeRoutes.acquire.path,
      params,
      body: { participantId: `p${ctx.id}`, ttlMs },
    });
    held();
    if (granted.outcome.type !== "ok") continue;
    ctx.knowledge.learnGrant(scope, (granted.outcome.body as { lease: { leaseId: string } }).lease.leaseId);
    // Queued behind the holder; granted only if the holder lapsed before the crash, and then
    // for the shortest ttl, which the caller's lapse time accounts for.
    const body = {
      participantId: `p${ctx.id}w`,
      ttlMs: LEASE_TTL_MS.min,
      waitMs: QUEUED_WAIT_MS,
      waiterId: `w-${ctx.id}-${ctx.history.newId()}`,
    };
    waits.push(
      record(
        ctx,
        "leaseWait",
        scope,
        { method: "POST", path: scopeRoutes.acquire.path, params, body },
        { timeoutMs: ctx.timeoutMs + QUEUED_WAIT_MS },
      ),
    );
  }
  if (session === undefined) return { waits, lastDeadlineMs };
  return {
    waits,
    lastDeadlineMs,
    bound: { ttlMs: session.ttlMs, deadlineMs: session.deadlineMs, endBeforeKill: rng.chance(0.5) },
    endBound: async () => {
      await record(ctx, "endLeaseGeneration", session.generation, leaseEndCall(ctx, session.generation));
    },
  };
}

/**
 * A fresh lease epoch of a session generation, for the bound claims: whatever lease it holds
 * is ended first (a keepalive never shortens one), then one keepalive starts the next epoch.
 */
async function freshLease(
  ctx: ClientContext,
): Promise<{ generation: string; ttlMs: number; deadlineMs: number } | undefined> {
  const generation = ctx.rng.pick(ctx.knowledge.sessionGenerations);
  const ttlMs = ctx.rng.int(BOUND_TTL_MS.min, BOUND_TTL_MS.max);
  await record(ctx, "endLeaseGeneration", generation, leaseEndCall(ctx, generation));
  const { outcome } = await record(ctx, "keepaliveGeneration", generation, keepaliveCall(ctx, generation, ttlMs));
  if (outcome.type !== "ok") return undefined;
  const deadlineMs = (outcome.body as { generation: { leaseExpiresAtMs: number } }).generation.leaseExpiresAtMs;
  return { generation, ttlMs, deadlineMs };
}
