/**
 * One observed claim operation placed on one possible state: the claims machine
 * (src/core/claim-machine.ts) asked at the instants where its outcome can differ, and the
 * states that agree with what the caller saw. The linearizability check
 * (linearizability.ts) chains these placements.
 *
 * Guarantees:
 * - Times are not guessed: a success's record sets them exactly; in between, the deadline is
 *   an interval, so expiry is tried both ways whenever the window allows either; within a
 *   way, the machine is asked at both ends of the window, just after its start and at the
 *   last heartbeat (the only instants where its outcome can differ).
 * - A success is matched on its record's logical fields (owner, token, phase, previous
 *   owner, successor, transfer and drain status, reason, version, and whether and to which
 *   lease epoch it is bound); the state after it is its record, exact.
 * - Bound claims (docs/protocol.md#sessions): the machine is asked with every lease view the
 *   history allows (lease-views.ts) — a bound hold ends only after the instant its epoch was
 *   live through (lease-epochs.ts), by a view or by its generation's delivery, which may
 *   come before any operation as an unobserved change of its own ({@link expired}). A bound
 *   hold's deadline interval is the deadline it learned (which decides whether a contending
 *   acquire asks its generation), never an expiry by the clock. An unanswered bind leaves a
 *   wildcard epoch that the next answered record fixes.
 *
 * Does not: order operations or judge real time beyond one window (linearizability.ts does).
 */
import { commandOf } from "../../../src/core/claim-command.ts";
import { decideClaim, type ClaimCommand, type ClaimStep } from "../../../src/core/claim-machine.ts";
import { CLAIM_MUTATIONS } from "../../../src/protocol/claim-routes.ts";
import type { ClaimRecord } from "../../../src/protocol/claims.ts";
import type { LeaseEpochs } from "./lease-epochs.ts";
import { delivered, isBoundHold, recordsAt, viewChoices } from "./lease-views.ts";
import { groupBy, type ClaimOp } from "./observations.ts";

/** Codes the machine decides; other refusals never reached it. */
export const MACHINE_CODES: ReadonlySet<string> = new Set([
  "claim_not_found",
  "not_owner",
  "stale_token",
  "no_transfer",
  "concurrent_transfer",
  "token_overflow",
  "claim_held",
  "invalid_request",
  "no_lease",
]);

/** A possible state of one claim between two operations. */
export interface State {
  record: ClaimRecord | undefined;
  /** The deadline lies in [expLo, expHi] (exact after a success). */
  expLo: number;
  expHi: number;
  /** No later operation happened before this instant. */
  nowLo: number;
}

/** An observed operation, ready to place: its command, its answer and its window. */
export interface Op {
  op: ClaimOp;
  command: ClaimCommand;
  /** The record of a success. */
  answer: ClaimRecord | undefined;
  /** The record a refusal carried (claim_held does): it was decided at that version. */
  seen: ClaimRecord | undefined;
  startMs: number;
  endMs: number;
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
  "bound",
  "leaseEpoch",
] as const;

export function logicalKey(record: ClaimRecord | undefined): string {
  return record === undefined ? "-" : LOGICAL.map((k) => String(record[k])).join("|");
}

/**
 * True when the machine's record `state` can be the answered `record`: the same logical
 * fields, a wildcard lease epoch (lease-views.ts) matching any epoch of a bound record.
 */
export function sameLogical(state: ClaimRecord | undefined, record: ClaimRecord | undefined): boolean {
  if (state !== undefined && record !== undefined && state.leaseEpoch < 0n && record.bound) {
    return logicalKey({ ...state, leaseEpoch: record.leaseEpoch }) === logicalKey(record);
  }
  return logicalKey(state) === logicalKey(record);
}

export function stateKey(s: State): string {
  return `${logicalKey(s.record)}|${s.expLo}|${s.expHi}|${s.nowLo}`;
}

/** The version of a state (0: the claim does not exist yet). */
export const versionOf = (record: ClaimRecord | undefined): bigint => record?.version ?? 0n;

/** True when `record` has a holder and a deadline (a bound hold's is the one it learned). */
export const isHeldRecord = (record: ClaimRecord | undefined): record is ClaimRecord =>
  record !== undefined && record.phase !== "unowned" && record.expiresAtMs !== 0;

/** True when `record`'s hold ends by the clock at its deadline (not a bound one). */
export const expiresByClock = (record: ClaimRecord | undefined): record is ClaimRecord =>
  isHeldRecord(record) && !record.bound;

/** The exact state a success leaves. */
export const exact = (record: ClaimRecord | undefined, nowLo: number): State => ({
  record,
  expLo: record?.expiresAtMs ?? 0,
  expHi: record?.expiresAtMs ?? 0,
  nowLo,
});

/**
 * The machine's command for an observed operation: its body decoded by its route, then the
 * one mapping; undefined for a body the route refuses (the router answered, the machine never ran).
 */
export function commandFor(op: ClaimOp): ClaimCommand | undefined {
  if (op.verb === "get") return { kind: "get" };
  const verb = op.verb;
  const body = CLAIM_MUTATIONS[verb].body.safeParse(op.body);
  return body.success ? commandOf(verb, body.data) : undefined;
}

/** The states `op` can lead to from `s`, given its answer; empty when it cannot be placed here. */
export function apply(name: string, s: State, o: Op, epochs: LeaseEpochs): State[] {
  const lo = Math.max(o.startMs, s.nowLo);
  const hi = o.endMs;
  if (lo > hi) return [];
  const r = s.record;
  const held = isHeldRecord(r);
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
    // Bound: the record as it was or after its epoch's end was delivered, with every view allowed.
    const placement = { command: o.command, answer: o.answer, fromMs: mode.from, toMs: mode.to };
    const steps: ClaimStep[] = [];
    for (const t of instants) {
      for (const record of recordsAt(name, t <= mode.dlLo ? mode.a : mode.b, t, epochs)) {
        for (const views of viewChoices(record, placement, t, epochs)) {
          steps.push(decideClaim(name, record, o.command, t, views));
        }
      }
    }
    const result = o.op.result;
    if (result.type === "ok") {
      const answer = o.answer!;
      if (steps.some((c) => c.result.ok && sameLogical(c.result.claim, answer))) {
        out.push(exact(answer, mode.from));
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

/**
 * The record `s` becomes when its deadline passes (expiry changes nothing but the hold), or,
 * for a bound hold, when its generation delivers the end of its epoch: at the earliest just
 * after the instant the epoch was live through.
 */
export function expired(name: string, s: State, epochs: LeaseEpochs): State | undefined {
  if (isBoundHold(s.record)) {
    const r = s.record;
    const at = Math.max(s.nowLo, epochs.bounds(r.ownerGeneration, r.leaseEpoch).liveThroughMs + 1);
    return { record: delivered(name, r, at), expLo: s.expLo, expHi: s.expHi, nowLo: at };
  }
  if (!isHeldRecord(s.record)) return undefined;
  const at = s.expLo + 1;
  const step = decideClaim(name, { ...s.record, expiresAtMs: s.expLo }, { kind: "get" }, at);
  return { record: step.next, expLo: s.expLo, expHi: s.expHi, nowLo: Math.max(s.nowLo, at) };
}

/** One line about an operation, for a violation's evidence. */
export function describe(o: Op): string {
  const r = o.op.result;
  const answer =
    r.type === "ok"
      ? `v${o.answer?.version} ${o.answer?.ownerGeneration}/${o.answer?.fencingToken} ${o.answer?.reason}`
      : r.type === "error"
        ? r.code
        : "?";
  return `${o.op.verb}#${o.op.key}(${JSON.stringify(o.op.body)})→${answer} [${o.startMs}..${o.endMs}]`;
}

/** One line about a state. */
export function describeState(s: State | undefined): string {
  const r = s?.record;
  return r === undefined
    ? "no claim"
    : `v${r.version} ${r.phase} ${r.ownerGeneration}/${r.fencingToken} ${r.reason} deadline ${s?.expLo}..${s?.expHi}`;
}
