/**
 * Checker: single-claim linearizability against the claims machine (src/core/claim-machine.ts),
 * anchored on versions, so it never has to search the whole history of a busy claim.
 *
 * Every persisted change bumps a claim's version by exactly one, and every success answers
 * the record at some version. So the successes fix the order of the changes: for each
 * version some success answered, in ascending order, the check replays the machine
 * (claim-step.ts) from the previous answered version to this one and asks that
 * - one of the successes at this version produced it from there (or nothing had to: the
 *   versions in between and this one came from unanswered operations or expiry), and every
 *   other success at it changed nothing (a read, a repeated release, …): so two successes
 *   with different records at one version, or a version nothing explains, are violations;
 * - real time holds: nothing is placed before an instant at which an operation placed
 *   earlier (at a lower version) had not yet been asked.
 * Between two answered versions the search is exhaustive over the unanswered operations
 * that could have taken effect there (each at most once, any instant after it was asked
 * and before the next crash or {@link UNKNOWN_WINDOW_MS}); a gap is usually one version,
 * so the search is small; past {@link BUDGET} steps it gives the gap up (its operations
 * are counted unchecked) and resumes at the next answered version, whose record is exact.
 *
 * After the last answered version, the states up to {@link TRAIL_DEPTH} unanswered operations
 * may have led to are tried too.
 *
 * Refusals carry no version (claim_held carries the record it saw: then that record must be
 * the state it fits): each must fit some state of the replayed chain — one that could still
 * have been current inside its window, where the machine refuses it with its code — and, in
 * the order the refusals completed, no earlier version than a refusal that completed before
 * it began. A refusal of a stretch given up (or broken by a violation) that fits nowhere is
 * unchecked, not a violation.
 *
 * Retries with the same operationId are one operation (observations.ts); refusals outside
 * the machine (operation_id_conflict, rate_limited, …) are treated as unanswered (the
 * server says they had no effect; the check only needs that they had at most one).
 *
 * Does not: judge several claims together (batches are per claim), nor the times of a
 * success beyond its window and its record's own clock readings; nor place refusals and
 * changes jointly — a refusal is fitted against the chain's bounds, it does not move the
 * instants of later changes (a relaxation: it can miss, never invent, a violation).
 */
import { claimRecordSchema, claimToWire, type ClaimRecord } from "../../../src/protocol/claims.ts";
import type { HistoryEntry } from "../history.ts";
import {
  apply,
  commandFor,
  describe,
  describeState,
  exact,
  expired,
  expiresByClock,
  isHeldRecord,
  logicalKey,
  MACHINE_CODES,
  sameLogical,
  stateKey,
  versionOf,
  type Op,
  type State,
} from "./claim-step.ts";
import { crashes } from "./durability.ts";
import { leaseEpochs, type LeaseEpochs } from "./lease-epochs.ts";
import { CLOCK_SLACK_MS, UNKNOWN_WINDOW_MS, claimOps, groupBy, type ClaimOp, type Violation } from "./observations.ts";

const CHECKER = "linearizability";
/** Operation placements the search between two answered versions may try. */
export const BUDGET = 100_000;
/** Possible pasts (which unanswered operations took effect) carried from one version to the next. */
export const MAX_BRANCHES = 64;

export interface LinearizabilityResult {
  violations: Violation[];
  /** Operations judged: placed in the replayed order, or shown to have no place. */
  checked: number;
  /** Operations not judged: bodies the route refuses, and those of stretches given up. */
  unchecked: number;
  /** Stretches between two answered versions given up past the budget. */
  gaveUp: number;
  /** Distinct versions answered, over all claims (the anchors of the replay). */
  versions: number;
}

/** One possible past: the state now, and which unanswered operations it used up. */
interface Branch {
  state: State;
  used: ReadonlySet<number>;
  /** The operation whose placement set `state.nowLo` (for a violation's evidence). */
  last: Op | undefined;
}

/** A state the claim was in, from `state.nowLo` at the earliest to `hi` at the latest. */
interface Epoch {
  state: State;
  version: bigint;
  hi: number;
}

class GiveUp extends Error {}

export function checkLinearizability(history: readonly HistoryEntry[]): LinearizabilityResult {
  const result: LinearizabilityResult = { violations: [], checked: 0, unchecked: 0, gaveUp: 0, versions: 0 };
  const crashTimes = crashes(history).map((c) => c.crashAtMs);
  const nextCrash = (t: number): number => crashTimes.find((c) => c > t) ?? Infinity;
  const leases = leaseEpochs(history);
  for (const [name, ops] of groupBy(claimOps(history), (o) => o.claim))
    checkClaim(name, ops, nextCrash, leases, result);
  return result;
}

function prepare(op: ClaimOp, nextCrash: (t: number) => number): Op | undefined {
  const command = commandFor(op);
  if (command === undefined) return undefined;
  if (op.result.type === "error" && !MACHINE_CODES.has(op.result.code)) {
    // Refused before the machine: at most "unanswered", and its window closes with the answer.
    const o = prepare({ ...op, result: { type: "unknown" } }, nextCrash)!;
    return { ...o, endMs: op.completeMs + CLOCK_SLACK_MS };
  }
  const answer = op.result.type === "ok" ? claimRecordSchema.parse(op.result.claim) : undefined;
  const carried = op.result.type === "error" ? op.result.claim : undefined;
  return {
    op,
    command,
    answer,
    seen: carried === undefined ? undefined : claimRecordSchema.parse(carried),
    startMs: Math.max(op.invokeMs, answer === undefined ? 0 : appliedNotBefore(op.verb, answer)) - CLOCK_SLACK_MS,
    endMs:
      op.result.type === "unknown"
        ? Math.min(nextCrash(op.lastInvokeMs), op.lastInvokeMs + UNKNOWN_WINDOW_MS)
        : op.completeMs + CLOCK_SLACK_MS,
  };
}

function checkClaim(
  name: string,
  claimOpsOfName: ClaimOp[],
  nextCrash: (t: number) => number,
  leases: LeaseEpochs,
  result: LinearizabilityResult,
): void {
  const answered = new Map<bigint, Op[]>();
  const refusals: Op[] = [];
  const unknowns: Op[] = [];
  for (const op of claimOpsOfName) {
    // An unanswered read changes nothing: nothing to judge.
    if (op.result.type === "unknown" && op.verb === "get") continue;
    const o = prepare(op, nextCrash);
    if (o === undefined) {
      result.unchecked++;
      continue;
    }
    if (o.answer !== undefined) {
      const at = answered.get(o.answer.version);
      if (at === undefined) answered.set(o.answer.version, [o]);
      else at.push(o);
    } else if (o.op.result.type === "error") refusals.push(o);
    else unknowns.push(o);
  }
  result.checked += unknowns.length;
  unknowns.sort((a, b) => a.startMs - b.startMs);
  const maxSpan = Math.max(0, ...unknowns.map((u) => u.endMs - u.startMs));
  const versions = [...answered.keys()].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  result.versions += versions.length;
  // The latest instant a state at version ≤ v can still be current: before every
  // operation that answered a later version completed.
  const minEndAfter: number[] = new Array<number>(versions.length + 1).fill(Infinity);
  for (let i = versions.length - 1; i >= 0; i--) {
    minEndAfter[i] = Math.min(minEndAfter[i + 1]!, ...answered.get(versions[i]!)!.map((o) => o.endMs));
  }
  const hiOf = (version: bigint): number => minEndAfter[upperIndex(versions, version)]!;

  const epochs = new Map<string, Epoch>();
  const addEpoch = (s: State): void => {
    const key = `${logicalKey(s.record)}|${s.expLo}|${s.expHi}`;
    const known = epochs.get(key);
    if (known !== undefined && known.state.nowLo <= s.nowLo) return;
    const version = versionOf(s.record);
    const hi = Math.min(hiOf(version), expiresByClock(s.record) ? s.expHi : Infinity);
    epochs.set(key, { state: s, version, hi });
  };
  const addPath = (path: State[]): void => {
    path.forEach((s, i) => {
      const prev = path[i - 1];
      const e = prev === undefined ? undefined : expired(name, prev, leases);
      // A state that is its predecessor's expiry began at the deadline, not when an
      // operation first saw it.
      if (e !== undefined && logicalKey(e.record) === logicalKey(s.record)) addEpoch({ ...s, nowLo: e.nowLo });
      else addEpoch(s);
      // An expiry applied lazily by the next change was a state of its own in between.
      const next = path[i + 1];
      if (next !== undefined && versionOf(next.record) === versionOf(s.record) + 2n) {
        const lazy = expired(name, s, leases);
        if (lazy !== undefined) addEpoch(lazy);
      }
    });
  };
  const holes: [number, number][] = [];

  let branches: Branch[] = [{ state: exact(undefined, -Infinity), used: new Set(), last: undefined }];
  let complete = true;
  addEpoch(branches[0]!.state);
  for (const v of versions) {
    const at = answered.get(v)!;
    result.checked += at.length;
    const resync = (): void => {
      const nowLo = Math.min(...at.map((o) => o.startMs));
      holes.push([Math.min(...branches.map((b) => b.state.nowLo)), Math.max(...at.map((o) => o.endMs))]);
      branches = [{ state: exact(at[0]!.answer, nowLo), used: new Set(), last: undefined }];
      complete = true;
      addEpoch(branches[0]!.state);
    };
    // One record per version, field for field (times included).
    const differing = at.find((o) => wireKey(o.answer!) !== wireKey(at[0]!.answer!));
    if (differing !== undefined) {
      result.violations.push({
        checker: CHECKER,
        message: `${name}: two successes answer version ${v} with different records: ${describe(at[0]!)}; ${describe(differing)}`,
      });
      resync();
      continue;
    }
    const budget = { steps: 0 };
    let next: Branch[];
    try {
      next = branches.flatMap((b) => advance(name, leases, b, v, at, unknowns, maxSpan, budget, addPath));
    } catch (err) {
      if (!(err instanceof GiveUp)) throw err;
      result.gaveUp++;
      result.checked -= at.length;
      result.unchecked += at.length;
      resync();
      continue;
    }
    if (next.length === 0) {
      if (complete) result.violations.push({ checker: CHECKER, message: explain(name, branches, v, at, unknowns) });
      else {
        result.gaveUp++;
        result.checked -= at.length;
        result.unchecked += at.length;
      }
      resync();
      continue;
    }
    ({ branches, complete } = prune(next, unknowns, complete));
  }
  if (!trail(name, leases, branches, unknowns, maxSpan, addEpoch)) {
    holes.push([Math.min(...branches.map((b) => b.state.nowLo)), Infinity]);
  }
  placeRefusals(name, leases, [...epochs.values()], refusals, holes, result);
}

/**
 * The branches at version `v` reachable from `from`: unanswered operations taking effect
 * (each once) and then one of `at` producing `v`, or the unanswered ones producing it alone;
 * then every other operation of `at` placed at `v` without a change.
 */
function advance(
  name: string,
  leases: LeaseEpochs,
  from: Branch,
  v: bigint,
  at: Op[],
  unknowns: Op[],
  maxSpan: number,
  budget: { steps: number },
  addPath: (path: State[]) => void,
): Branch[] {
  const answer = at[0]!.answer!;
  // The change to v happened before every operation that answered v completed.
  const limit = Math.min(...at.map((o) => o.endMs));
  const out: Branch[] = [];
  const reached = (s: State, used: ReadonlySet<number>, producer: Op | undefined, path: State[]): void => {
    let nowLo = s.nowLo;
    let last = producer ?? from.last;
    for (const o of at) {
      if (o === producer) continue;
      const placed = apply(name, s, o, leases).filter((n) => versionOf(n.record) === v);
      if (placed.length === 0) return;
      const t = Math.min(...placed.map((n) => n.nowLo));
      if (t > nowLo) [nowLo, last] = [t, o];
    }
    addPath([...path, s]);
    out.push({ state: { ...s, nowLo }, used, last });
  };
  const step = (): void => {
    if (++budget.steps > BUDGET) throw new GiveUp();
  };
  // Orders of the same unanswered operations that end in the same state end alike.
  // (A state reached with the same operations used no earlier than before adds nothing.)
  const seen = new Map<string, number>();
  const visit = (s: State, used: ReadonlySet<number>, path: State[]): void => {
    const key = `${stateKey({ ...s, nowLo: 0 })}|${[...used].sort((x, y) => x - y).join(",")}`;
    if ((seen.get(key) ?? Infinity) <= s.nowLo) return;
    seen.set(key, s.nowLo);
    for (const p of at) {
      step();
      for (const n of apply(name, s, p, leases)) if (versionOf(n.record) === v) reached(n, used, p, [...path, s]);
    }
    // The deadline passing alone (the alarm, or an operation that saw it) may be the change to v.
    const lapsed = expired(name, s, leases);
    if (lapsed !== undefined && sameLogical(lapsed.record, answer)) {
      reached(exact(answer, lapsed.nowLo), used, undefined, [...path, s]);
    }
    const version = versionOf(s.record);
    const end = upperStart(unknowns, limit);
    for (let i = end - 1; i >= 0 && unknowns[i]!.startMs >= s.nowLo - maxSpan; i--) {
      const u = unknowns[i]!;
      if (used.has(i) || u.endMs < s.nowLo) continue;
      step();
      for (const n of apply(name, s, u, leases)) {
        const nv = versionOf(n.record);
        if (nv <= version || nv > v) continue;
        const more = new Set(used).add(i);
        if (nv < v) visit(n, more, [...path, s]);
        else if (sameLogical(n.record, answer) && matchesDeadline(n, answer)) {
          reached(exact(answer, n.nowLo), more, undefined, [...path, s]);
        }
      }
    }
  };
  visit(from.state, from.used, []);
  return out;
}

/** How many unanswered operations may take effect after the last answered version, in the states refusals may fit. */
export const TRAIL_DEPTH = 3;

/**
 * The states after the last answered version: no success fixes them, but an unanswered
 * operation may still have taken effect (and a refusal seen it). Up to {@link TRAIL_DEPTH}
 * of them, within the budget; false when that cut the search short.
 */
function trail(
  name: string,
  leases: LeaseEpochs,
  branches: Branch[],
  unknowns: Op[],
  maxSpan: number,
  addEpoch: (s: State) => void,
): boolean {
  let steps = 0;
  let whole = true;
  const walk = (s: State, used: ReadonlySet<number>, depth: number): void => {
    addEpoch(s);
    const lapsed = expired(name, s, leases);
    if (lapsed !== undefined) addEpoch(lapsed);
    const version = versionOf(s.record);
    for (let i = unknowns.length - 1; i >= 0 && unknowns[i]!.startMs >= s.nowLo - maxSpan; i--) {
      if (used.has(i) || unknowns[i]!.endMs < s.nowLo) continue;
      if (depth === TRAIL_DEPTH || ++steps > BUDGET) {
        whole = false;
        return;
      }
      for (const n of apply(name, s, unknowns[i]!, leases)) {
        if (versionOf(n.record) > version) walk(n, new Set(used).add(i), depth + 1);
      }
    }
  };
  for (const b of branches) walk(b.state, b.used, 0);
  return whole;
}

function wireKey(record: ClaimRecord): string {
  return JSON.stringify(claimToWire(record));
}

function matchesDeadline(s: State, answer: ClaimRecord): boolean {
  return !isHeldRecord(answer) || (answer.expiresAtMs >= s.expLo && answer.expiresAtMs <= s.expHi);
}

/**
 * One branch per set of still-usable unanswered operations used (the earliest), none that
 * another dominates, at most {@link MAX_BRANCHES}; `complete` turns false when some had to
 * be dropped.
 */
function prune(next: Branch[], unknowns: Op[], complete: boolean): { branches: Branch[]; complete: boolean } {
  const best = new Map<string, Branch>();
  for (const b of next) {
    const live = [...b.used].filter((i) => unknowns[i]!.endMs >= b.state.nowLo).sort((x, y) => x - y);
    const key = `${logicalKey(b.state.record)}|${live.join(",")}`;
    const known = best.get(key);
    if (known === undefined || b.state.nowLo < known.state.nowLo) best.set(key, { ...b, used: new Set(live) });
  }
  // A branch that used a subset of another's operations, no later, can do all it can.
  const branches: Branch[] = [];
  for (const b of [...best.values()].sort((x, y) => x.state.nowLo - y.state.nowLo)) {
    const dominated = branches.some(
      (k) => logicalKey(k.state.record) === logicalKey(b.state.record) && [...k.used].every((i) => b.used.has(i)),
    );
    if (!dominated) branches.push(b);
  }
  return {
    branches: branches.slice(0, MAX_BRANCHES),
    complete: complete && branches.length <= MAX_BRANCHES,
  };
}

/**
 * Each refusal in the earliest state of the chain where it fits, in the order the refusals
 * completed, never before one that completed before it began.
 */
function placeRefusals(
  name: string,
  leases: LeaseEpochs,
  epochs: Epoch[],
  refusals: Op[],
  holes: [number, number][],
  result: LinearizabilityResult,
): void {
  epochs.sort((a, b) => (a.version < b.version ? -1 : a.version > b.version ? 1 : a.state.nowLo - b.state.nowLo));
  const minLoFrom: number[] = new Array<number>(epochs.length + 1).fill(Infinity);
  for (let i = epochs.length - 1; i >= 0; i--) minLoFrom[i] = Math.min(minLoFrom[i + 1]!, epochs[i]!.state.nowLo);
  // hi is not monotone, but the latest possible end of any state at or above an index is.
  const maxHiUpTo: number[] = [];
  epochs.forEach((e, i) => maxHiUpTo.push(Math.max(maxHiUpTo[i - 1] ?? -Infinity, e.hi)));
  refusals.sort((a, b) => a.endMs - b.endMs);
  const doneEnds: number[] = [];
  const doneMaxVersion: bigint[] = [];
  for (const r of refusals) {
    const before = upperIndex(doneEnds, r.startMs - 1);
    const bound = before === 0 ? -1n : doneMaxVersion[before - 1]!;
    let i = lowerBound(maxHiUpTo, r.startMs);
    let fit: Epoch | undefined;
    for (; i < epochs.length && minLoFrom[i]! <= r.endMs; i++) {
      const e = epochs[i]!;
      if (e.version < bound || e.hi < r.startMs || e.state.nowLo > r.endMs) continue;
      if (r.seen !== undefined && !sameLogical(e.state.record, r.seen)) continue;
      const placed = apply(name, e.state, { ...r, endMs: Math.min(r.endMs, e.hi) }, leases);
      if (placed.some((n) => versionOf(n.record) === e.version)) {
        fit = e;
        break;
      }
    }
    if (fit === undefined) {
      if (holes.some(([lo, hi]) => r.startMs <= hi && r.endMs >= lo)) {
        result.unchecked++;
        continue;
      }
      result.checked++;
      result.violations.push({
        checker: CHECKER,
        message: `${name}: no state explains a refusal: ${describe(r)} (no state current inside its window, at or after version ${bound < 0n ? 0n : bound}, refuses it so)`,
      });
      continue;
    }
    result.checked++;
    doneEnds.push(r.endMs);
    doneMaxVersion.push(fit.version > (doneMaxVersion.at(-1) ?? -1n) ? fit.version : doneMaxVersion.at(-1)!);
  }
}

/** A violation's evidence: where the replay stood, and why nothing produced version `v`. */
function explain(name: string, branches: Branch[], v: bigint, at: Op[], unknowns: Op[]): string {
  const b = branches[0]!;
  const from = versionOf(b.state.record);
  const late = at.find((o) => o.endMs < b.state.nowLo);
  if (late !== undefined && b.last !== undefined) {
    return `${name}: real-time order inverted: ${describe(late)} answered v${v} and completed before ${describe(b.last)} (at v${from}) began`;
  }
  const limit = Math.min(...at.map((o) => o.endMs));
  const candidates = unknowns.filter((u) => u.startMs <= limit && u.endMs >= b.state.nowLo).length;
  const what =
    v - from > 1n ? `version gap: nothing explains v${from + 1n}..v${v - 1n} and then v${v}` : `nothing produces v${v}`;
  return `${name}: ${what} from state ${describeState(b.state)} (${branches.length} possible pasts, ${candidates} unanswered operations in reach): ${at
    .slice(0, 6)
    .map(describe)
    .join("; ")}`;
}

/**
 * The server's own clock reading in a success, a lower bound of when it was applied: the
 * heartbeat an acquire, renew or commit stamps (a success that changed nothing carries an
 * older reading: still a lower bound). A retried operation whose first attempt was lost is
 * placed by this, not by the first attempt.
 */
function appliedNotBefore(verb: ClaimOp["verb"], answer: ClaimRecord): number {
  if (verb === "acquire" || verb === "renew" || verb === "commit") return answer.lastHeartbeatMs;
  return 0;
}

/**
 * The first index in `0..n` at which `before(i)` is false, for a `before` that holds for a
 * prefix of the indices and not after it (a binary search).
 */
function partitionPoint(n: number, before: (i: number) => boolean): number {
  let lo = 0;
  let hi = n;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (before(mid)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Index of the first element of ascending `xs` greater than `x`. */
function upperIndex<T extends number | bigint>(xs: readonly T[], x: T): number {
  return partitionPoint(xs.length, (i) => xs[i]! <= x);
}

/** Index of the first element of ascending `xs` at or above `x`. */
function lowerBound(xs: readonly number[], x: number): number {
  return partitionPoint(xs.length, (i) => xs[i]! < x);
}

/** How many of `ops` (sorted by start) start at or before `t`. */
function upperStart(ops: readonly Op[], t: number): number {
  return partitionPoint(ops.length, (i) => ops[i]!.startMs <= t);
}
