/**
 * What a lapse crash leaves behind (faults.ts): with the clients stopped and everything they
 * held lapsed, one more client takes every object that has a deadline, with the ttl the
 * fault chose, so that the crash leaves deadlines to fall due while the server is down or
 * just as it comes back:
 * - every claim acquired by a generation of the key space and, every other one, a transfer
 *   prepared to another (`reserved` → successor, the lease running on the reservation);
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
import { LEASE_TTL_MS, record, type ClientContext } from "./workload.ts";

/** How long the queued acquire asks to wait: far longer than any crash takes to come. */
const QUEUED_WAIT_MS = 60_000;

export interface HeldForCrash {
  /** The waiting acquires still in flight (they end with the crash). */
  waits: Promise<unknown>[];
  /** The latest deadline any of these calls may have set (epoch ms). */
  lastDeadlineMs: number;
}

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
  for (const [i, claim] of keys.claims.entries()) {
    const owner = rng.pick(keys.generations);
    const call = (verb: "acquire" | "prepare", body: Record<string, unknown>) => ({
      method: "POST" as const,
      path: CLAIM_MUTATIONS[verb].path,
      params: { ns, claim },
      body: { ...body, operationId: operationId() },
    });
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
  return { waits, lastDeadlineMs };
}
