/**
 * The session clients (docs/protocol.md#sessions): each one registers a generation of the key
 * space and keeps its lease — by HTTP keepalives, or over the lease channel — while it takes
 * claims bound to it among the other clients' unbound ones, and hands them over by bound
 * transfers to the other sessions' generations. Its lease does not always survive: a session
 * may keep it late (its next keepalive comes after the deadline: a new epoch), stop keeping it
 * (it expires), or end it (`lease/end`), now and then while a transfer from it, or to
 * another session's generation, is prepared. The fault injector can also end a lease and
 * crash the server right after, or crash it as a lease expires ({@link SessionBoard}, faults.ts).
 *
 * Guarantees:
 * - Every call is recorded as a client's (workload.ts `record`: history `op` entries, the
 *   lease channel's frames as `channel` entries), so every checker judges it; claim
 *   mutations carry fresh operationIds and ambiguous ones are retried as the other
 *   clients' are; `lease/end` carries one too.
 * - Every choice comes from the session's own generator, forked after every other client's
 *   and the lapse crashes' (runner.ts), so a seed's other choices and faults are the same
 *   with sessions or without.
 * - A session passes the run's gate before each step, keepalives and pings included: at a
 *   quiet point its lease runs out like everything else a client holds.
 * - When the run stops, each session closes its channel and ends its lease.
 *
 * Does not: wait for its bound claims to expire (the checkers judge when they did).
 */
import { getClaim } from "../../src/protocol/claim-routes.ts";
import { endGenerationLease, keepaliveGeneration, registerGeneration } from "../../src/protocol/generation-routes.ts";
import type { Outcome } from "./history.ts";
import { LeaseChannel, type ChannelLease } from "./lease-channel.ts";
import { sleep } from "./server-process.ts";
import type { Call } from "./wire.ts";
import { record, sendClaimMutation, type ClientContext } from "./workload.ts";

/** Lease ttls the sessions mostly ask for (ms): within the coord leases' range. */
export const SESSION_TTL_MS = { min: 600, max: 2_000 } as const;
/**
 * The ttls of one lease in five (ms): longer than the server takes to restart (8–26 s on a
 * loaded machine), so that deadlines answered before a crash are still ahead after it and
 * the restart rule (docs/generations.md "The lease after a restart") is put to the test.
 * Such a lease outlives LONGEST_DEADLINE_MS, and its bound claims a quiet point.
 */
export const SESSION_LONG_TTL_MS = { min: 5_000, max: 25_000 } as const;
/** A session crash timed on an expiry waits for a deadline at most this far ahead (ms). */
const EXPIRING_WITHIN_MS = 3_000;

/** How a session treats the lease it just started. */
type Plan = "keep" | "late" | "lapse" | "end";

/** What the sessions' leases are, for the fault injector's session crashes. */
export class SessionBoard {
  /** The lease each session holds, as it knows it, and whether it is keeping it. */
  readonly leases = new Map<string, { lease: ChannelLease | undefined; held: boolean }>();

  /**
   * A session whose lease is live now (and ends within `withinMs`), preferring one for which
   * `pending` holds (a transfer prepared from it).
   */
  pick(pending: (generation: string) => boolean, roll: number, withinMs = Infinity): string | undefined {
    const now = Date.now();
    const live = [...this.leases.entries()]
      .filter(([, s]) => !s.held && s.lease !== undefined && s.lease.deadlineMs > now + 50)
      .filter(([, s]) => s.lease!.deadlineMs <= now + withinMs)
      .map(([g]) => g);
    const preferred = live.filter(pending);
    const from = preferred.length > 0 ? preferred : live;
    return from.length === 0 ? undefined : from[Math.floor(roll * from.length)];
  }
}

interface Session {
  ctx: ClientContext;
  generation: string;
  peers: string[];
  board: SessionBoard;
  /** The lease as the session knows it (HTTP: its last keepalive's answer; channel: the channel's). */
  lease: ChannelLease | undefined;
  channel: LeaseChannel | undefined;
  ttlMs: number;
  plan: Plan;
  nextKeepAtMs: number;
  opSeq: number;
  registered: boolean;
}

/** Run one session on `generation` until `ctx.stopped()`; `peers` are the other sessions' generations. */
export async function runSession(
  ctx: ClientContext,
  generation: string,
  peers: string[],
  board: SessionBoard,
): Promise<void> {
  const s: Session = {
    ctx,
    generation,
    peers,
    board,
    lease: undefined,
    channel: undefined,
    ttlMs: SESSION_TTL_MS.min,
    plan: "keep",
    nextKeepAtMs: 0,
    opSeq: 0,
    registered: false,
  };
  board.leases.set(generation, { lease: undefined, held: false });
  while (!ctx.stopped()) {
    await ctx.gate.enter();
    try {
      if (ctx.stopped()) break;
      await step(s);
    } finally {
      ctx.gate.leave();
    }
    await sleep(ctx.rng.int(10, 60));
  }
  s.channel?.close();
  if (s.lease !== undefined) await endLease(s, generation);
}

async function step(s: Session): Promise<void> {
  const { ctx } = s;
  const now = Date.now();
  if (!s.registered) return register(s);
  const boardEntry = s.board.leases.get(s.generation)!;
  if (s.channel !== undefined) s.lease = s.channel.heldUntilMs();
  if (s.lease !== undefined && now > s.lease.deadlineMs) s.lease = undefined;
  boardEntry.lease = s.lease;
  // The fault injector holds this lease while it times a crash on its expiry: no keepalive.
  if (boardEntry.held) return claimStep(s);
  if (s.lease === undefined && now >= s.nextKeepAtMs) return startLease(s);
  if (s.lease !== undefined && now >= s.nextKeepAtMs) return keep(s);
  if (s.lease !== undefined && s.plan === "end" && ctx.rng.chance(0.05)) {
    await endLease(s, s.generation);
    return;
  }
  return claimStep(s);
}

/** Start a lease: a keepalive (70 %) or a lease channel, a fresh ttl, and a plan for it. */
async function startLease(s: Session): Promise<void> {
  const { rng } = s.ctx;
  s.channel?.close();
  s.channel = undefined;
  const ttl = rng.chance(0.2) ? SESSION_LONG_TTL_MS : SESSION_TTL_MS;
  s.ttlMs = rng.int(ttl.min, ttl.max);
  const roll = rng.next();
  s.plan = roll < 0.6 ? "keep" : roll < 0.75 ? "late" : roll < 0.9 ? "lapse" : "end";
  if (rng.chance(0.7)) {
    await keepalive(s);
  } else {
    s.channel = new LeaseChannel(
      s.ctx.history,
      s.ctx.baseUrl(),
      s.ctx.keys.namespace,
      s.generation,
      s.ttlMs,
      s.ctx.timeoutMs,
    );
    s.lease = await s.channel.opened;
  }
  s.nextKeepAtMs = nextKeep(s);
}

/** One keepalive of the live lease (a ping on the channel), then when the next one is due. */
async function keep(s: Session): Promise<void> {
  if (s.channel !== undefined) {
    if (!s.channel.ping()) s.lease = undefined;
  } else {
    await keepalive(s);
  }
  s.nextKeepAtMs = nextKeep(s);
}

/**
 * When the next keepalive is due, by plan: every ttl/3 (keep, end); past the deadline (late:
 * the next keepalive starts a new epoch); or not before the lease is long gone (lapse).
 */
function nextKeep(s: Session): number {
  const { rng } = s.ctx;
  const deadline = s.lease?.deadlineMs ?? Date.now();
  if (s.lease === undefined) return Date.now() + rng.int(0, 300);
  if (s.plan === "late" && rng.chance(0.25)) return deadline + rng.int(1, 400);
  if (s.plan === "lapse" && rng.chance(0.2)) return deadline + rng.int(500, 2_500);
  return Date.now() + Math.floor(s.ttlMs / 3) + rng.int(-50, 50);
}

/** The keepalive of `generation`'s lease for `ttlMs`. */
export function keepaliveCall(ctx: ClientContext, generation: string, ttlMs: number): Call {
  return {
    method: "POST",
    path: keepaliveGeneration.path,
    params: { ns: ctx.keys.namespace, id: generation },
    body: { ttlMs },
  };
}

/** `lease/end` of `generation`'s lease, with a fresh operationId (a retry sends the same call again). */
export function leaseEndCall(ctx: ClientContext, generation: string): Call {
  return {
    method: "POST",
    path: endGenerationLease.path,
    params: { ns: ctx.keys.namespace, id: generation },
    body: { operationId: `end-${ctx.id}-${ctx.history.newId()}` },
  };
}

async function keepalive(s: Session): Promise<void> {
  const { ctx } = s;
  const { outcome } = await record(ctx, "keepaliveGeneration", s.generation, keepaliveCall(ctx, s.generation, s.ttlMs));
  if (outcome.type === "error" && outcome.code === "generation_not_found") await register(s);
  s.lease = leaseOf(outcome) ?? (outcome.type === "unknown" ? s.lease : undefined);
}

/** End `generation`'s lease (this session's, or a peer's), retrying an ambiguous end once or twice. */
async function endLease(s: Session, generation: string): Promise<Outcome> {
  const { ctx } = s;
  const call = leaseEndCall(ctx, generation);
  const first = await record(ctx, "endLeaseGeneration", generation, call);
  let outcome = first.outcome;
  for (let attempt = 0; outcome.type === "unknown" && attempt < 2 && ctx.rng.chance(0.6); attempt++) {
    await sleep(ctx.rng.int(50, 500));
    ({ outcome } = await record(ctx, "endLeaseGeneration", generation, call, { retryOf: first.id }));
  }
  if (generation === s.generation && outcome.type === "ok") {
    s.channel?.close();
    s.channel = undefined;
    s.lease = undefined;
    s.nextKeepAtMs = Date.now() + ctx.rng.int(0, 500);
  }
  return outcome;
}

async function register(s: Session): Promise<void> {
  const { outcome } = await record(s.ctx, "registerGeneration", s.generation, {
    method: "POST",
    path: registerGeneration.path,
    params: { ns: s.ctx.keys.namespace },
    body: { id: s.generation, service: "torture", instanceId: `session-${s.generation}` },
  });
  s.registered = outcome.type === "ok";
}

/** The lease an answered generation record shows (undefined: none). */
function leaseOf(outcome: Outcome): ChannelLease | undefined {
  if (outcome.type !== "ok") return undefined;
  const g = (outcome.body as { generation: { leaseEpoch: string; leaseExpiresAtMs: number } }).generation;
  return g.leaseExpiresAtMs > 0 ? { epoch: g.leaseEpoch, deadlineMs: g.leaseExpiresAtMs } : undefined;
}

/**
 * One claim call as this session: bound acquires, bound transfers from and to it, renewals
 * (a bound claim's answers unchanged) and releases of what it holds, reads; and `lease/end`
 * of this session's or a successor's lease while a transfer is prepared.
 */
async function claimStep(s: Session): Promise<void> {
  const { ctx, generation: me } = s;
  const { rng, keys, knowledge } = ctx;
  const claims = keys.claims;
  const known = (c: string) => knowledge.claims.get(c) ?? { owner: "", token: "0", pending: "" };
  const mine = claims.filter((c) => known(c).owner === me);
  const toMe = claims.filter((c) => known(c).pending === me);
  const preparedFromMe = mine.filter((c) => known(c).pending !== "");
  const operationId = (): string => `op-${ctx.id}-${s.opSeq++}`;
  const roll = rng.next();
  if (roll < 0.05 && preparedFromMe.length > 0) {
    // A lease ended while a transfer is prepared: the owner's (the claim expires) or the successor's.
    const claim = rng.pick(preparedFromMe);
    await endLease(s, rng.chance(0.5) ? me : known(claim).pending);
    return;
  }
  // A transfer from (or to) this session where it knows of none is mostly an acquire instead.
  const aimless = (candidates: string[]): boolean => candidates.length === 0 && rng.chance(0.9);
  if (roll < 0.4 || (roll < 0.55 && aimless(mine)) || (roll < 0.72 && roll >= 0.55 && aimless(toMe))) {
    const claim = rng.pick(claims);
    const body = { generationId: me, bound: true, ...(rng.chance(0.1) ? { allowEmptyOnly: true } : {}) };
    return sendClaimMutation(ctx, "acquire", claim, { ...body, operationId: operationId() });
  }
  if (roll < 0.55) {
    const claim = mine.length > 0 && rng.chance(0.9) ? rng.pick(mine) : rng.pick(claims);
    const to = s.peers.length > 0 ? rng.pick(s.peers) : `${me}x`;
    const bound = rng.chance(0.8) ? { bound: true } : { ttlMs: rng.int(SESSION_TTL_MS.min, SESSION_TTL_MS.max) };
    const body = { fromGeneration: me, toGeneration: to, token: known(claim).token, ...bound };
    return sendClaimMutation(ctx, "prepare", claim, { ...body, operationId: operationId() });
  }
  if (roll < 0.72) {
    const claim = toMe.length > 0 && rng.chance(0.9) ? rng.pick(toMe) : rng.pick(claims);
    const k = known(claim);
    const from = k.owner !== "" && k.owner !== me ? k.owner : rng.pick(keys.generations.filter((g) => g !== me));
    const bound = rng.chance(0.8) ? { bound: true } : { ttlMs: rng.int(SESSION_TTL_MS.min, SESSION_TTL_MS.max) };
    const body = { fromGeneration: from, toGeneration: me, expectedToken: k.token, ...bound };
    return sendClaimMutation(ctx, "commit", claim, { ...body, operationId: operationId() });
  }
  if (roll < 0.82 && mine.length > 0) {
    const claim = rng.pick(mine);
    const body = {
      generationId: me,
      token: known(claim).token,
      ttlMs: rng.int(SESSION_TTL_MS.min, SESSION_TTL_MS.max),
    };
    return sendClaimMutation(ctx, "renew", claim, { ...body, operationId: operationId() });
  }
  if (roll < 0.9 && mine.length > 0) {
    const claim = rng.pick(mine);
    return sendClaimMutation(ctx, "release", claim, {
      generationId: me,
      token: known(claim).token,
      operationId: operationId(),
    });
  }
  const claim = rng.pick(claims);
  const { outcome } = await record(ctx, "get", claim, {
    method: "GET",
    path: getClaim.path,
    params: { ns: keys.namespace, claim },
  });
  if (outcome.type === "ok") knowledge.learnClaim(outcome.body);
}

/**
 * The fault injector's side of a session crash (faults.ts): end a live session lease now —
 * one with a transfer prepared from it if there is — recorded as client `ctx`'s call;
 * resolves once it was answered (true) or when no session holds a live lease (false).
 */
export async function endForCrash(ctx: ClientContext, board: SessionBoard): Promise<boolean> {
  const pending = (g: string): boolean =>
    [...ctx.knowledge.claims.values()].some((c) => c.owner === g && c.pending !== "");
  const generation = board.pick(pending, ctx.rng.next());
  if (generation === undefined) return false;
  const { outcome } = await record(ctx, "endLeaseGeneration", generation, leaseEndCall(ctx, generation));
  return outcome.type === "ok";
}

/**
 * Hold a live session lease that ends within 3 s (its session stops keeping it) and return
 * its generation and deadline, for a crash timed on its expiry (undefined: none); {@link releaseHeld}
 * lets the session keep it again.
 */
export function holdForCrash(
  ctx: ClientContext,
  board: SessionBoard,
): { generation: string; deadlineMs: number } | undefined {
  const generation = board.pick(() => true, ctx.rng.next(), EXPIRING_WITHIN_MS);
  const entry = generation === undefined ? undefined : board.leases.get(generation);
  if (generation === undefined || entry?.lease === undefined) return undefined;
  entry.held = true;
  return { generation, deadlineMs: entry.lease.deadlineMs };
}

/** Let every held session keep its lease again. */
export function releaseHeld(board: SessionBoard): void {
  for (const entry of board.leases.values()) entry.held = false;
}
