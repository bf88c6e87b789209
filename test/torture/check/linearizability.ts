/**
 * Checker: single-claim linearizability against the claims machine (src/core/claim-machine.ts),
 * a Wing–Gong search with Lowe's memoisation (as Porcupine does), one claim at a time.
 *
 * The history of a claim is cut into segments where no operation spans the cut (every
 * earlier operation answered before any later one was asked). Within a segment the search
 * looks for an order of the operations that respects real time and in which the machine,
 * fed each operation at an instant inside its window, gives every answered operation its
 * answer: the same outcome and, for successes, the same record (owner, token, phase,
 * previous owner, successor, transfer and drain status, reason, version). Times are not
 * guessed: a success's record sets them, and in between the machine's deadline is an
 * interval, so expiry is tried both ways whenever the window allows either; within a way,
 * the machine is asked at both ends of the window, just after its start and at the last
 * heartbeat (the only instants where its outcome can differ).
 *
 * - An operation without an answer may take effect at any instant after it was asked, up to
 *   the next crash (the process that had it died), or never.
 * - Retries with the same operationId are one operation (observations.ts): a second
 *   application has no operation to explain it and fails the search.
 * - Bounded: a segment whose search passes {@link BUDGET} steps before finding an order,
 *   that ends in more than {@link MAX_STATES} possible states, or that holds more than
 *   {@link MAX_SEGMENT_OPS} operations (the search recurses once per operation placed), is
 *   given up (reported, not a violation); checking resumes at the next segment that starts
 *   with a lone answered operation. When the budget runs out after some orders were found,
 *   the next segment starts from those; if it then has no order, that is reported as given
 *   up too.
 * - Visited (operations done, state) pairs are remembered by a 64-bit Zobrist hash of the
 *   done set: a collision could prune a branch (odds ~2^-64 per pair).
 */
import { commandOf } from "../../../src/core/claim-command.ts";
import { decideClaim, type ClaimCommand } from "../../../src/core/claim-machine.ts";
import { CLAIM_MUTATIONS } from "../../../src/protocol/claim-routes.ts";
import { claimRecordSchema, type ClaimRecord } from "../../../src/protocol/claims.ts";
import type { HistoryEntry } from "../history.ts";
import { crashes } from "./durability.ts";
import { claimOps, groupBy, type ClaimOp, type Violation } from "./observations.ts";

const CHECKER = "linearizability";
/** Steps (operation applications) one segment may take before the search gives up. */
export const BUDGET = 100_000;
/** Distinct end states a segment may leave before the search gives up. */
export const MAX_STATES = 64;
/**
 * Operations one segment may hold: the search recurses once per operation it places, and a
 * segment of a few thousand (48 clients on 12 claims, overlapping without a pause for
 * minutes) overflowed Node's stack in a 40-minute run. Such a segment is given up instead.
 */
export const MAX_SEGMENT_OPS = 1_000;
/**
 * How long after it was asked an unanswered operation may still take effect when no crash
 * ends it first: far beyond the longest pause (3.5 s) plus the client timeout.
 */
const UNKNOWN_WINDOW_MS = 60_000;
/** Clock slack (ms) between the client's and the server's readings of one instant. */
const SLACK_MS = 5;
/** Codes the machine decides; other refusals (e.g. operation_id_conflict) had no effect. */
const MACHINE_CODES = new Set([
  "claim_not_found",
  "not_owner",
  "stale_token",
  "no_transfer",
  "concurrent_transfer",
  "token_overflow",
  "claim_held",
  "invalid_request",
]);

interface State {
  record: ClaimRecord | undefined;
  /** The deadline lies in [expLo, expHi] (exact after a success). */
  expLo: number;
  expHi: number;
  /** No later operation happened before this instant. */
  nowLo: number;
}

interface Op {
  op: ClaimOp;
  command: ClaimCommand;
  answer: ClaimRecord | undefined;
  startMs: number;
  endMs: number;
}

export interface LinearizabilityResult {
  violations: Violation[];
  /** Segments checked, and given up (with the operations in them). */
  segments: number;
  gaveUp: number;
  gaveUpOps: number;
  skippedOps: number;
}

const LOGICAL = [
  "ownerGeneration",
  "fencingToken",
  "phase",
  "previousOwner",
  "pendingSuccessor",
  "drainStatus",
  "transferStatus",
  "reason",
  "version",
] as const;

function logicalKey(record: ClaimRecord | undefined): string {
  return record === undefined ? "-" : LOGICAL.map((k) => String(record[k])).join("|");
}

function stateKey(s: State): string {
  return `${logicalKey(s.record)}|${s.expLo}|${s.expHi}|${s.nowLo}`;
}

/**
 * The machine's command for an observed operation: its body decoded by its route, then the
 * one mapping; undefined for a body the route refuses (the router answered, the machine never ran).
 */
function command(op: ClaimOp): ClaimCommand | undefined {
  if (op.verb === "get") return { kind: "get" };
  const verb = op.verb;
  const body = CLAIM_MUTATIONS[verb].body.safeParse(op.body);
  return body.success ? commandOf(verb, body.data) : undefined;
}

/** The states `op` can lead to from `s`, given its answer; empty when it cannot be placed here. */
export function apply(name: string, s: State, o: Op): State[] {
  const lo = Math.max(o.startMs, s.nowLo);
  const hi = o.endMs;
  if (lo > hi) return [];
  const r = s.record;
  const held = r !== undefined && r.phase !== "unowned" && r.expiresAtMs !== 0;
  // Each mode: the record at the window's two ends (deadline, instant) — [a] early, [b] late —
  // and the deadline interval the mode implies.
  interface Mode {
    a: ClaimRecord | undefined;
    b: ClaimRecord | undefined;
    from: number;
    to: number;
    dlLo: number;
    dlHi: number;
  }
  const modes: Mode[] = [];
  if (!held) modes.push({ a: r, b: r, from: lo, to: hi, dlLo: s.expLo, dlHi: s.expHi });
  else {
    // Not expired yet: the deadline is at or after the instant.
    if (lo <= s.expHi) {
      const dlLo = Math.max(s.expLo, lo);
      const to = Math.min(hi, s.expHi);
      modes.push({
        a: { ...r, expiresAtMs: dlLo },
        b: { ...r, expiresAtMs: s.expHi },
        from: lo,
        to,
        dlLo,
        dlHi: s.expHi,
      });
    }
    // Expired: the instant is after the deadline.
    if (hi > s.expLo) {
      const expired = { ...r, expiresAtMs: s.expLo };
      modes.push({ a: expired, b: expired, from: Math.max(lo, s.expLo + 1), to: hi, dlLo: s.expLo, dlHi: s.expLo });
    }
  }
  const out: State[] = [];
  for (const mode of modes) {
    // The outcome can depend on the instant itself (a same-owner acquire at the very
    // millisecond of the last heartbeat changes nothing): decide at both ends, just after
    // the start and at the heartbeat, and keep every distinct outcome.
    const heartbeat = mode.a?.lastHeartbeatMs ?? mode.from;
    const instants = [...new Set([mode.from, mode.from + 1, heartbeat, mode.to])].filter(
      (t) => t >= mode.from && t <= mode.to,
    );
    const steps = instants.map((t) => decideClaim(name, t <= mode.dlLo ? mode.a : mode.b, o.command, t));
    const result = o.op.result;
    if (result.type === "ok") {
      const answer = o.answer!;
      if (steps.some((c) => c.result.ok && logicalKey(c.result.claim) === logicalKey(answer))) {
        out.push({ record: answer, expLo: answer.expiresAtMs, expHi: answer.expiresAtMs, nowLo: mode.from });
      }
      continue;
    }
    const matching =
      result.type === "error" ? steps.filter((c) => !c.result.ok && c.result.refusal.code === result.code) : steps;
    for (const group of groupBy(matching, (c) => logicalKey(c.next)).values()) {
      out.push(
        carry(
          s,
          group.map((c) => c.next),
          mode,
        ),
      );
    }
  }
  return out;
}

/**
 * The state after an unanswered or refused step, from the records the instants tried gave
 * (one outcome). Unchanged: the mode's deadline interval. Changed: the deadline lies
 * between the earliest and the latest of theirs.
 */
function carry(
  s: State,
  nexts: (ClaimRecord | undefined)[],
  mode: { from: number; dlLo: number; dlHi: number },
): State {
  const nowLo = mode.from;
  const a = nexts[0];
  if (a === undefined) return { record: a, expLo: 0, expHi: 0, nowLo };
  if (a.version === s.record?.version) return { record: a, expLo: mode.dlLo, expHi: mode.dlHi, nowLo };
  const deadlines = nexts.map((n) => n?.expiresAtMs ?? a.expiresAtMs);
  return { record: a, expLo: Math.min(...deadlines), expHi: Math.max(...deadlines), nowLo };
}

class GiveUp extends Error {}

/** 64-bit Zobrist keys of the operations' "done" bits (a set's key is the XOR of its members'). */
function zobrist(n: number): Uint32Array {
  const keys = new Uint32Array(2 * n);
  let x = 0x9e3779b9;
  for (let i = 0; i < keys.length; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    keys[i] = x >>> 0;
  }
  return keys;
}

/** Where a failed search got furthest: what it explained and what it could not place next. */
interface Deepest {
  count: number;
  state: State | undefined;
  done: Uint8Array;
}

interface SegmentResult {
  /** End states (at least one) and whether the search saw all of them. */
  ends: State[];
  complete: boolean;
}

/**
 * Search one segment from each start state. Returns its end states, or "violation" when no
 * order explains it; throws GiveUp past the budget before finding any.
 */
function searchSegment(name: string, ops: Op[], starts: State[], deepest: Deepest): SegmentResult | "violation" {
  if (ops.length > MAX_SEGMENT_OPS) throw new GiveUp();
  const ends = new Map<string, State>();
  const seen = new Set<string>();
  let steps = 0;
  let complete = true;
  const n = ops.length;
  const done = new Uint8Array(n);
  const keys = zobrist(n);
  let h1 = 0;
  let h2 = 0;
  const flip = (i: number): void => {
    done[i] = done[i] === 1 ? 0 : 1;
    h1 ^= keys[2 * i]!;
    h2 ^= keys[2 * i + 1]!;
  };
  const visit = (s: State, count: number): void => {
    if (count === n) {
      // Nothing of the next segment starts before this one ends: only the record and deadline carry.
      const end = { ...s, nowLo: 0 };
      ends.set(stateKey(end), end);
      if (ends.size > MAX_STATES) throw new GiveUp();
      return;
    }
    if (count > deepest.count || deepest.state === undefined) {
      deepest.count = count;
      deepest.state = s;
      deepest.done = done.slice();
    }
    const key = `${h1}:${h2}|${stateKey(s)}`;
    if (seen.has(key)) return;
    seen.add(key);
    // Real time: only operations asked before every pending one was answered can go next.
    let minEnd = Infinity;
    for (let i = 0; i < n; i++) if (done[i] === 0) minEnd = Math.min(minEnd, ops[i]!.endMs);
    for (let i = 0; i < n; i++) {
      const o = ops[i]!;
      if (done[i] === 1 || o.startMs > minEnd) continue;
      if (++steps > BUDGET) {
        if (ends.size === 0) throw new GiveUp();
        complete = false;
        return;
      }
      flip(i);
      for (const next of apply(name, s, o)) visit(next, count + 1);
      // An unanswered operation may never have happened.
      if (o.op.result.type === "unknown") visit(s, count + 1);
      flip(i);
    }
  };
  for (const start of starts) visit(start, 0);
  return ends.size === 0 ? "violation" : { ends: [...ends.values()], complete };
}

export function checkLinearizability(history: readonly HistoryEntry[]): LinearizabilityResult {
  const result: LinearizabilityResult = { violations: [], segments: 0, gaveUp: 0, gaveUpOps: 0, skippedOps: 0 };
  const crashTimes = crashes(history).map((c) => c.crashAtMs);
  const nextCrash = (t: number): number => crashTimes.find((c) => c > t) ?? Infinity;
  for (const [name, claimOpsOfName] of groupBy(claimOps(history), (o) => o.claim)) {
    const ops: Op[] = [];
    for (const op of claimOpsOfName) {
      if (op.result.type === "error" && !MACHINE_CODES.has(op.result.code)) {
        result.skippedOps++;
        continue;
      }
      // An unanswered read changes nothing a later operation would not change the same way.
      if (op.result.type === "unknown" && op.verb === "get") continue;
      const decoded = command(op);
      if (decoded === undefined) {
        result.skippedOps++;
        continue;
      }
      const answer = op.result.type === "ok" ? claimRecordSchema.parse(op.result.claim) : undefined;
      ops.push({
        op,
        command: decoded,
        answer,
        startMs: Math.max(op.invokeMs, answer === undefined ? 0 : appliedNotBefore(op.verb, answer)) - SLACK_MS,
        endMs:
          op.result.type === "unknown"
            ? Math.min(nextCrash(op.lastInvokeMs), op.lastInvokeMs + UNKNOWN_WINDOW_MS)
            : op.completeMs + SLACK_MS,
      });
    }
    ops.sort((a, b) => a.startMs - b.startMs);
    let states: State[] | undefined = [{ record: undefined, expLo: 0, expHi: 0, nowLo: 0 }];
    // False when `states` may lack some end state of the previous segment (budget spent).
    let statesComplete = true;
    for (const segment of segments(ops)) {
      result.segments++;
      if (states === undefined) {
        // Resynchronise: a lone answered first operation fixes the state.
        const [first, ...rest] = segment;
        const lone = first !== undefined && first.answer !== undefined && rest.every((o) => o.startMs > first.endMs);
        if (!lone) {
          result.skippedOps += segment.length;
          continue;
        }
        states = [
          {
            record: first.answer,
            expLo: first.answer!.expiresAtMs,
            expHi: first.answer!.expiresAtMs,
            nowLo: first.startMs,
          },
        ];
        segment.shift();
      }
      try {
        const deepest: Deepest = { count: 0, state: undefined, done: new Uint8Array(0) };
        const ends = searchSegment(name, segment, states, deepest);
        if (ends === "violation" && !statesComplete) {
          result.gaveUp++;
          result.gaveUpOps += segment.length;
          states = undefined;
        } else if (ends === "violation") {
          result.violations.push({ checker: CHECKER, message: explain(name, segment, deepest) });
          states = undefined;
        } else {
          states = ends.ends;
          statesComplete = ends.complete;
        }
      } catch (err) {
        if (!(err instanceof GiveUp)) throw err;
        result.gaveUp++;
        result.gaveUpOps += segment.length;
        states = undefined;
      }
    }
  }
  return result;
}

function describe(o: Op): string {
  const r = o.op.result;
  const answer =
    r.type === "ok"
      ? `v${o.answer?.version} ${o.answer?.ownerGeneration}/${o.answer?.fencingToken}`
      : r.type === "error"
        ? r.code
        : "?";
  return `${o.op.verb}#${o.op.key}(${JSON.stringify(o.op.body)})→${answer} [${o.startMs}..${o.endMs}]`;
}

/** A violation's evidence: how far the search got, in what state, and what it could not place. */
function explain(name: string, segment: Op[], deepest: Deepest): string {
  const r = deepest.state?.record;
  const state =
    r === undefined
      ? "no claim"
      : `v${r.version} ${r.phase} ${r.ownerGeneration}/${r.fencingToken} ${r.reason} deadline ${deepest.state?.expLo}..${deepest.state?.expHi}`;
  const pending = segment.filter((_, i) => deepest.done[i] !== 1);
  const minEnd = Math.min(...pending.map((o) => o.endMs));
  const next = pending.filter((o) => o.startMs <= minEnd);
  return `${name}: no linearization of ${segment.length} operations from op ${segment[0]?.op.key}; the longest explained prefix has ${deepest.count}, ending in state ${state}; none of these could go next: ${next
    .slice(0, 8)
    .map(describe)
    .join("; ")}`;
}

/**
 * The server's own clock reading in a success, a lower bound of when it was applied: the
 * heartbeat an acquire, renew or commit stamps (a success that changed nothing carries an
 * older reading: still a lower bound). A retried
 * operation whose first attempt was lost is placed by this, not by the first attempt.
 */
function appliedNotBefore(verb: ClaimOp["verb"], answer: ClaimRecord): number {
  if (verb === "acquire" || verb === "renew" || verb === "commit") return answer.lastHeartbeatMs;
  return 0;
}

/** Cut `ops` (sorted by start) where nothing spans the cut. */
function segments(ops: Op[]): Op[][] {
  const out: Op[][] = [];
  let current: Op[] = [];
  let reach = -Infinity;
  for (const o of ops) {
    if (current.length > 0 && o.startMs > reach) {
      out.push(current);
      current = [];
    }
    current.push(o);
    reach = Math.max(reach, o.endMs);
  }
  if (current.length > 0) out.push(current);
  return out;
}
