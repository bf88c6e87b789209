// The commands of the differential fuzz (server-differential.test.ts): claims, generations and
// coord operations drawn from small pools of names, so sequences collide — the same claim,
// generation, scope and operation id come back — and reach the interesting rules (held,
// stale tokens, transfers, operation-id replay and conflict, illegal state moves, publish
// CAS, released leases).
//
// Each command runs on both sides — the in-memory backends and the real server through the
// HTTP client — and records one normalized outcome per side: the resolved value or the
// error's code and details, with every time field (`…AtMs`, `…Ms`) and lease id (random
// on each side) removed and counters as decimal strings. The outcomes must be equal. Times
// are the only thing left out: the memory side runs on a ManualClock that moves 1 ms per
// step and the server on its own clock; every ttl is at least an hour, so nothing expires
// during a sequence and expiry is not modelled.
import fc from "fast-check";
import type { ClaimsBackend, BatchOp } from "../../src/client/claims/claims-backend.ts";
import type { Coordinator, PublishRequest, Scope, WriteLease } from "../../src/client/coord/coord-types.ts";
import { GENERATION_STATES } from "../../src/protocol/generations.ts";
import { ShiftlockError } from "../../src/protocol/errors.ts";
import type { ManualClock } from "../../src/core/clock.ts";

/** One side of the comparison: its claims backend, its coordinator, the leases it holds. */
export interface Side {
  claims: ClaimsBackend;
  coord: Coordinator;
  /** Leases granted so far, by grant order (index shared by both sides while they agree). */
  leases: WriteLease[];
}

/** The two sides, and what the sequence has learnt (kept equal on both, or the run fails). */
export interface Real {
  memory: Side;
  server: Side;
  /** Last fencing token seen per claim, so commands can present a current one. */
  tokens: Map<string, bigint>;
  /** Last generation seen per scope key, for publish with the current `expectedGeneration`. */
  generations: Map<string, bigint>;
  /** Outcomes so far, printed when a step disagrees. */
  log: string[];
  /** The memory side's clock: one millisecond passes before every step (see {@link both}). */
  clock: ManualClock;
}

/** Steps compared so far and how many ended in each outcome (`ok` or an error code), for the run's summary. */
export const STATS = { steps: 0, outcomes: new Map<string, number>() };

/** fast-check's model: nothing beyond the real state is needed to choose commands. */
export type Model = Record<string, never>;

const HOUR = 3_600_000;
const CLAIMS = ["c0", "c1"] as const;
const GENERATIONS = ["g0", "g1", "g2"] as const;
const OPERATION_IDS = ["op0", "op1", "op2"] as const;
const PARTICIPANTS = ["p0", "p1"] as const;
const SCOPES: readonly Scope[] = [
  { volumeId: "v", objectStoreId: "s0", participantId: "" },
  { volumeId: "v", key: "k0", participantId: "" },
];

const scopeKey = (scope: Scope): string => `${scope.volumeId}/${scope.objectStoreId ?? ""}/${scope.key ?? ""}`;

/** A value with time fields and lease ids (random per side) dropped and bigints as strings, for comparison. */
export function normalize(value: unknown): unknown {
  if (typeof value === "bigint") return value.toString();
  if (value instanceof Uint8Array) return `bytes:${[...value].join(",")}`;
  if (Array.isArray(value)) return value.map(normalize);
  if (value !== null && typeof value === "object") {
    return Object.fromEntries(
      Object.entries(value as Record<string, unknown>)
        .filter(([key]) => !/(AtMs|Ms)$/.test(key) && key !== "leaseId")
        .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
        .map(([key, v]) => [key, normalize(v)]),
    );
  }
  return value;
}

/** The outcome of a call: its normalized value, or the error's code and normalized details. */
async function outcome(call: () => Promise<unknown>): Promise<unknown> {
  try {
    return { ok: normalize(await call()) };
  } catch (err) {
    if (err instanceof ShiftlockError) return { error: err.code, details: normalize(err.details) };
    throw err;
  }
}

/** Run `call` on both sides, fail unless the outcomes are equal, and return both raw results. */
async function both<T>(real: Real, what: string, call: (side: Side) => Promise<T>): Promise<[unknown, unknown]> {
  // At least a millisecond passes before every step on both sides: the memory clock is
  // advanced by one, and the server's clock (this machine's) by waiting a millisecond. Time
  // fields are not compared, but one rule reads them: an acquire by the owner that changes
  // nothing but the heartbeat of the same millisecond is not a change (no version bump), so
  // both sides must agree on whether any time passed.
  await real.clock.advance(1);
  await new Promise((resolve) => setTimeout(resolve, 1));
  const results: { value?: T }[] = [{}, {}];
  const outcomes = await Promise.all(
    [real.memory, real.server].map((side, i) =>
      outcome(async () => {
        const value = await call(side);
        results[i]!.value = value;
        return value;
      }),
    ),
  );
  const [memory, server] = outcomes.map((o) => JSON.stringify(o));
  real.log.push(`${what} → ${memory}`);
  STATS.steps++;
  const kind = (outcomes[0] as { error?: string }).error ?? "ok";
  STATS.outcomes.set(kind, (STATS.outcomes.get(kind) ?? 0) + 1);
  if (memory !== server) {
    throw new Error(
      `memory and server disagree on ${what}\n  memory: ${memory}\n  server: ${server}\n` +
        `steps so far:\n  ${real.log.join("\n  ")}`,
    );
  }
  return [results[0]!.value, results[1]!.value];
}

/** Remember the token of a claim record (both sides agree, so one is enough). */
function learnToken(real: Real, value: unknown): void {
  const claim = value as { name?: string; fencingToken?: bigint } | undefined;
  if (claim?.name !== undefined && claim.fencingToken !== undefined) real.tokens.set(claim.name, claim.fencingToken);
}

/** A token to present: the current one most of the time, else a small (often stale) one. */
const tokenChoice = fc.oneof(
  { weight: 3, arbitrary: fc.constant("current" as const) },
  { weight: 1, arbitrary: fc.bigInt({ min: 0n, max: 3n }) },
);
type TokenChoice = "current" | bigint;
const pick = (real: Real, claim: string, choice: TokenChoice): bigint =>
  choice === "current" ? (real.tokens.get(claim) ?? 0n) : choice;

const operationId = fc.option(fc.constantFrom(...OPERATION_IDS), { nil: undefined, freq: 2 });
const ttlMs = fc.constantFrom(HOUR, 2 * HOUR);

/** A claim mutation as a batch op (the single calls take the same request). */
const claimOp = fc.record({
  op: fc.constantFrom("acquire", "renew", "release", "prepare", "commit", "abort"),
  claim: fc.constantFrom(...CLAIMS),
  gen: fc.constantFrom(...GENERATIONS),
  to: fc.constantFrom(...GENERATIONS),
  token: tokenChoice,
  ttlMs,
  allowEmptyOnly: fc.boolean(),
  operationId,
});
type ClaimOpRecipe = typeof claimOp extends fc.Arbitrary<infer T> ? T : never;

function toBatchOp(real: Real, r: ClaimOpRecipe): BatchOp {
  const token = pick(real, r.claim, r.token);
  const id = r.operationId === undefined ? {} : { operationId: r.operationId };
  const claimName = r.claim;
  switch (r.op) {
    case "acquire":
      return { op: "acquire", claimName, generationId: r.gen, ttlMs: r.ttlMs, allowEmptyOnly: r.allowEmptyOnly, ...id };
    case "renew":
      return { op: "renew", claimName, generationId: r.gen, token, ttlMs: r.ttlMs, ...id };
    case "release":
      return { op: "release", claimName, generationId: r.gen, token, ...id };
    case "prepare":
      return { op: "prepare", claimName, fromGeneration: r.gen, toGeneration: r.to, token, ttlMs: r.ttlMs, ...id };
    case "commit":
      return {
        op: "commit",
        claimName,
        fromGeneration: r.gen,
        toGeneration: r.to,
        expectedToken: token,
        ttlMs: r.ttlMs,
        ...id,
      };
    default:
      return { op: "abort", claimName, fromGeneration: r.gen, toGeneration: r.to, expectedToken: token, ...id };
  }
}

/** The single call a batch op stands for (its request without `op`, which single calls refuse). */
function single(side: Side, batchOp: BatchOp): Promise<unknown> {
  const { op: _op, ...request } = batchOp;
  const op = { op: batchOp.op, request } as {
    [K in BatchOp["op"]]: { op: K; request: Omit<Extract<BatchOp, { op: K }>, "op"> };
  }[BatchOp["op"]];
  switch (op.op) {
    case "acquire":
      return side.claims.acquireClaim(op.request);
    case "renew":
      return side.claims.renewClaim(op.request);
    case "release":
      return side.claims.releaseClaim(op.request);
    case "prepare":
      return side.claims.prepareTransfer(op.request);
    case "commit":
      return side.claims.commitTransfer(op.request);
    default:
      return side.claims.abortTransfer(op.request);
  }
}

/** A step of a sequence: fast-check shrinks sequences of these. */
export type Step = fc.AsyncCommand<Model, Real>;

function step(name: string, run: (real: Real) => Promise<void>): Step {
  return { check: () => true, run: (_m, real) => run(real), toString: () => name };
}

const claimCommand = claimOp.map((r) =>
  step(`claim ${JSON.stringify(r, (_k, v: unknown) => (typeof v === "bigint" ? `${v}n` : v))}`, async (real) => {
    const op = toBatchOp(real, r);
    const [value] = await both(real, `${op.op} ${JSON.stringify(normalize(op))}`, (side) => single(side, op));
    learnToken(real, value);
  }),
);

const batchCommand = fc.uniqueArray(claimOp, { minLength: 1, maxLength: 3, selector: (r) => r.claim }).map((ops) =>
  step(`batch ${ops.length}`, async (real) => {
    const batch = ops.map((r) => toBatchOp(real, r));
    const [value] = await both(real, `batch ${JSON.stringify(normalize(batch))}`, (side) => side.claims.batch(batch));
    for (const o of (value as { ok: boolean; claim?: unknown }[] | undefined) ?? [])
      if (o.ok) learnToken(real, o.claim);
  }),
);

const getClaimCommand = fc.constantFrom(...CLAIMS).map((claim) =>
  step(`get ${claim}`, async (real) => {
    const [value] = await both(real, `get ${claim}`, (side) => side.claims.getClaim(claim));
    learnToken(real, value);
  }),
);

const registerCommand = fc
  .record({
    id: fc.constantFrom(...GENERATIONS),
    service: fc.constantFrom("s", "t"),
    instanceId: fc.constantFrom("i", "j"),
  })
  .map((req) =>
    step(`register ${JSON.stringify(req)}`, async (real) => {
      await both(real, `register ${JSON.stringify(req)}`, (side) => side.claims.registerGeneration(req));
    }),
  );

const updateCommand = fc
  .record({
    id: fc.constantFrom(...GENERATIONS),
    state: fc.constantFrom(...GENERATION_STATES),
    reason: fc.option(fc.constantFrom("deploy", "drain"), { nil: undefined }),
  })
  .map((r) =>
    step(`update ${JSON.stringify(r)}`, async (real) => {
      const req = { id: r.id, state: r.state, ...(r.reason === undefined ? {} : { reason: r.reason }) };
      await both(real, `update ${JSON.stringify(req)}`, (side) => side.claims.updateGeneration(req));
    }),
  );

const getGenerationCommand = fc.constantFrom(...GENERATIONS).map((id) =>
  step(`get generation ${id}`, async (real) => {
    await both(real, `get generation ${id}`, (side) => side.claims.getGeneration(id));
  }),
);

const scope = fc.constantFrom(...SCOPES);

const tryAcquireCommand = fc.record({ scope, participantId: fc.constantFrom(...PARTICIPANTS) }).map((r) =>
  step(`lease try ${scopeKey(r.scope)} ${r.participantId}`, async (real) => {
    const s = { ...r.scope, participantId: r.participantId };
    await both(real, `lease try ${scopeKey(s)} ${r.participantId}`, async (side) => {
      const result = await side.coord.tryAcquireWriteLease(s, { ttlMs: HOUR });
      if (result.acquired) side.leases.push(result.lease);
      return result.acquired
        ? { acquired: true, epoch: result.lease.epoch, participantId: result.lease.scope.participantId }
        : { acquired: false, holder: result.holder };
    });
  }),
);

/** A held (or once held) lease by grant index, modulo the number granted. */
const leaseIndex = fc.nat();

function leaseAt(side: Side, index: number): WriteLease | undefined {
  return side.leases.length === 0 ? undefined : side.leases[index % side.leases.length];
}

const publishCommand = fc
  .record({
    lease: leaseIndex,
    expected: fc.constantFrom("none", "current", "stale"),
    generation: fc.option(fc.bigInt({ min: 0n, max: 6n }), { nil: undefined, freq: 3 }),
    root: fc.option(fc.jsonValue({ maxDepth: 2 }), { nil: undefined }),
  })
  .map((r) =>
    step(`publish ${JSON.stringify(r, (_k, v: unknown) => (typeof v === "bigint" ? `${v}n` : v))}`, async (real) => {
      const [value] = await both(real, `publish ${r.lease} ${r.expected}`, async (side) => {
        const lease = leaseAt(side, r.lease);
        if (lease === undefined) return "no lease";
        const current = real.generations.get(scopeKey(lease.scope)) ?? 0n;
        const req: PublishRequest = {};
        if (r.expected === "current") req.expectedGeneration = current;
        if (r.expected === "stale") req.expectedGeneration = current + 1n;
        if (r.generation !== undefined) req.generation = r.generation;
        if (r.root !== undefined) req.root = r.root;
        return { scope: scopeKey(lease.scope), snapshot: await lease.publish(req) };
      });
      const published = value as { scope?: string; snapshot?: { generation: bigint } } | undefined;
      if (published?.scope !== undefined && published.snapshot !== undefined) {
        real.generations.set(published.scope, published.snapshot.generation);
      }
    }),
  );

const refreshCommand = leaseIndex.map((index) =>
  step(`refresh ${index}`, async (real) => {
    await both(real, `refresh ${index}`, async (side) => {
      const lease = leaseAt(side, index);
      return lease === undefined ? "no lease" : await lease.refresh();
    });
  }),
);

const releaseCommand = leaseIndex.map((index) =>
  step(`release lease ${index}`, async (real) => {
    await both(real, `release lease ${index}`, async (side) => {
      const lease = leaseAt(side, index);
      if (lease === undefined) return "no lease";
      await lease.release();
      return { released: true, err: lease.err?.message ?? null };
    });
  }),
);

const snapshotCommand = scope.map((s) =>
  step(`snapshot ${scopeKey(s)}`, async (real) => {
    const [value] = await both(real, `snapshot ${scopeKey(s)}`, (side) =>
      side.coord.snapshot({ ...s, participantId: "reader" }),
    );
    const snap = value as { generation?: bigint } | undefined;
    if (snap?.generation !== undefined) real.generations.set(scopeKey(s), snap.generation);
  }),
);

const capabilityCommand = scope.map((s) =>
  step(`capability ${scopeKey(s)}`, async (real) => {
    await both(real, `capability ${scopeKey(s)}`, async (side) => {
      // The backend's own name differs by design ("in-memory" vs "durable-object").
      const { backend: _backend, ...rest } = await side.coord.capability({ ...s, participantId: "reader" });
      return rest;
    });
  }),
);

/** Every command, weighted towards the claim rules. */
export const COMMANDS: fc.Arbitrary<Step>[] = [
  claimCommand,
  claimCommand,
  claimCommand,
  batchCommand,
  getClaimCommand,
  registerCommand,
  updateCommand,
  getGenerationCommand,
  tryAcquireCommand,
  tryAcquireCommand,
  publishCommand,
  publishCommand,
  refreshCommand,
  releaseCommand,
  snapshotCommand,
  capabilityCommand,
];
