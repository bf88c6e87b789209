/**
 * Checker: durability across restarts — nothing the server answered before a crash is
 * missing from what it answers after the restart.
 *
 * For every crash, what was observed before it (answers completed before the SIGKILL) is
 * compared with every answer to a call invoked after the restart. Violations:
 * - claims: a version or fencing token below one observed before the crash;
 * - generations: a record missing (`generation_not_found`) or in a state that cannot be
 *   reached from the state acknowledged before the crash (generation-machine.ts's moves);
 * - coord: a snapshot or publish answer with a generation below an acknowledged publish, or
 *   at that generation with another root; a lease granted with an epoch not above every
 *   epoch granted before the crash.
 */
import { LEGAL_TRANSITIONS } from "../../../src/core/generation-machine.ts";
import type { GenerationState } from "../../../src/protocol/generations.ts";
import type { HistoryEntry, OpEntry } from "../history.ts";
import { claimObservations, type Violation } from "./observations.ts";

const CHECKER = "durability";

interface Crash {
  crashAtMs: number;
  restartAtMs: number;
}

/** Crash/restart pairs of a history, in order. */
export function crashes(history: readonly HistoryEntry[]): Crash[] {
  const result: Crash[] = [];
  for (const entry of history) {
    if (entry.t !== "fault") continue;
    if (entry.kind === "crash") result.push({ crashAtMs: entry.atMs, restartAtMs: Infinity });
    if (entry.kind === "restart" && result.length > 0) result[result.length - 1]!.restartAtMs = entry.atMs;
  }
  return result;
}

/** States reachable from `from` (itself included) by legal moves. */
function reachable(from: GenerationState): Set<GenerationState> {
  const seen = new Set<GenerationState>([from]);
  const queue = [from];
  for (let state = queue.shift(); state !== undefined; state = queue.shift()) {
    for (const next of LEGAL_TRANSITIONS[state]) {
      if (!seen.has(next)) {
        seen.add(next);
        queue.push(next);
      }
    }
  }
  return seen;
}

export function checkDurability(history: readonly HistoryEntry[]): Violation[] {
  const violations: Violation[] = [];
  const ops = history.filter((e): e is OpEntry => e.t === "op");
  const observations = claimObservations(history);
  for (const [n, crash] of crashes(history).entries()) {
    const label = `crash ${n + 1}`;
    const before = <T>(items: T[], done: (item: T) => number): T[] => items.filter((i) => done(i) < crash.crashAtMs);
    const after = <T>(items: T[], start: (item: T) => number): T[] => items.filter((i) => start(i) > crash.restartAtMs);

    // Claims: highest version and token seen before the crash.
    const high = new Map<string, { version: bigint; token: bigint }>();
    for (const o of before(observations, (o) => o.completeMs)) {
      const h = high.get(o.claim.name) ?? { version: 0n, token: 0n };
      const version = BigInt(o.claim.version);
      const token = BigInt(o.claim.fencingToken);
      high.set(o.claim.name, {
        version: version > h.version ? version : h.version,
        token: token > h.token ? token : h.token,
      });
    }
    for (const o of after(observations, (o) => o.invokeMs)) {
      const h = high.get(o.claim.name);
      if (h === undefined) continue;
      if (BigInt(o.claim.version) < h.version || BigInt(o.claim.fencingToken) < h.token) {
        violations.push({
          checker: CHECKER,
          message: `${label}: ${o.claim.name} at version ${o.claim.version} token ${o.claim.fencingToken} (${o.source}), but version ${h.version} token ${h.token} was seen before the crash`,
        });
      }
    }

    // Generations: the last acknowledged state before the crash.
    const acked = new Map<string, GenerationState>();
    for (const op of before(ops, (o) => o.completeMs)) {
      const state = generationState(op);
      if (state !== undefined) acked.set(op.target, state);
    }
    for (const op of after(ops, (o) => o.invokeMs)) {
      const was = acked.get(op.target);
      if (was === undefined || !op.route.endsWith("Generation")) continue;
      if (op.outcome.type === "error" && op.outcome.code === "generation_not_found") {
        violations.push({
          checker: CHECKER,
          message: `${label}: generation ${op.target} (acknowledged ${was}) not found (op ${op.id})`,
        });
      }
      const state = generationState(op);
      if (state !== undefined && !reachable(was).has(state)) {
        violations.push({
          checker: CHECKER,
          message: `${label}: generation ${op.target} in ${state} (op ${op.id}), unreachable from acknowledged ${was}`,
        });
      }
    }

    // Coord: published generation + root and granted epochs before the crash.
    const published = new Map<string, { generation: bigint; root: string }>();
    const epochs = new Map<string, bigint>();
    for (const op of before(ops, (o) => o.completeMs)) {
      if (op.outcome.type !== "ok") continue;
      if (op.route === "publish") {
        const snap = op.outcome.body as { generation: string; root: unknown };
        const g = BigInt(snap.generation);
        if (g >= (published.get(op.target)?.generation ?? 0n)) {
          published.set(op.target, { generation: g, root: JSON.stringify(snap.root) });
        }
      }
      const epoch = leaseEpoch(op);
      if (epoch !== undefined && epoch > (epochs.get(op.target) ?? 0n)) epochs.set(op.target, epoch);
    }
    for (const op of after(ops, (o) => o.invokeMs)) {
      if (op.outcome.type !== "ok") continue;
      const p = published.get(op.target);
      if (p !== undefined && (op.route === "snapshot" || op.route === "publish")) {
        const snap = op.outcome.body as { generation: string; root: unknown };
        const g = BigInt(snap.generation);
        const sameRootRequired = op.route === "snapshot" && g === p.generation;
        if (g < p.generation || (sameRootRequired && JSON.stringify(snap.root) !== p.root)) {
          violations.push({
            checker: CHECKER,
            message: `${label}: ${op.target} ${op.route} (op ${op.id}) answered generation ${g} root ${JSON.stringify(snap.root)}; generation ${p.generation} root ${p.root} was acknowledged before the crash`,
          });
        }
      }
      const e = epochs.get(op.target);
      if (e !== undefined && (op.route === "leaseTry" || op.route === "leaseWait") && leaseEpoch(op)! <= e) {
        violations.push({
          checker: CHECKER,
          message: `${label}: ${op.target} granted epoch ${leaseEpoch(op)} (op ${op.id}), not above epoch ${e} granted before the crash`,
        });
      }
    }
  }
  return violations;
}

function generationState(op: OpEntry): GenerationState | undefined {
  if (!op.route.endsWith("Generation")) return undefined;
  const body = op.outcome.type === "ok" ? op.outcome.body : op.outcome.type === "error" ? op.outcome.body : undefined;
  if (op.outcome.type === "error" && op.outcome.code !== "generation_exists") return undefined;
  const record =
    (body as { generation?: { state?: GenerationState } } | null)?.generation ??
    (body as { error?: { generation?: { state?: GenerationState } } } | null)?.error?.generation;
  return record?.state;
}

function leaseEpoch(op: OpEntry): bigint | undefined {
  if (op.outcome.type !== "ok") return undefined;
  if (op.route !== "leaseTry" && op.route !== "leaseWait" && op.route !== "keepalive") return undefined;
  return BigInt((op.outcome.body as { lease: { epoch: string } }).lease.epoch);
}
