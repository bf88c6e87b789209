/**
 * Checker: coord epochs and published generations.
 *
 * Violations, per scope:
 * - two grants with the same epoch, or a grant answered before another was asked for with
 *   an epoch not above it (epochs strictly increase in real time);
 * - two acknowledged publishes with the same generation, or a publish answered before
 *   another was asked for with a generation not below it; a publish with
 *   `expectedGeneration` that answered a generation not above it;
 * - an acknowledged publish not visible in a snapshot asked for after it was answered (a
 *   lower generation, or the same generation with another root).
 */
import type { HistoryEntry, OpEntry } from "../history.ts";
import { groupBy, type Violation } from "./observations.ts";

const CHECKER = "coord";

interface Point {
  op: OpEntry;
  value: bigint;
  root: string;
}

export function checkCoord(history: readonly HistoryEntry[]): Violation[] {
  const violations: Violation[] = [];
  const ok = history.filter((e): e is OpEntry => e.t === "op" && e.outcome.type === "ok");
  for (const [scope, ops] of groupBy(ok, (op) => op.target)) {
    const body = (op: OpEntry): unknown => (op.outcome as { body: unknown }).body;
    const grants: Point[] = ops
      .filter((op) => op.route === "leaseTry" || op.route === "leaseWait")
      .map((op) => ({ op, value: BigInt((body(op) as { lease: { epoch: string } }).lease.epoch), root: "" }));
    const snap = (op: OpEntry): Point => {
      const s = body(op) as { generation: string; root: unknown };
      return { op, value: BigInt(s.generation), root: JSON.stringify(s.root) };
    };
    const publishes = ops.filter((op) => op.route === "publish").map(snap);
    const snapshots = ops.filter((op) => op.route === "snapshot").map(snap);

    unique(scope, "epoch", grants, violations);
    increasing(scope, "epoch", grants, grants, violations);
    unique(scope, "published generation", publishes, violations);
    increasing(scope, "published generation", publishes, publishes, violations);
    for (const p of publishes) {
      const expected = (p.op.request as { expectedGeneration?: string }).expectedGeneration;
      if (expected !== undefined && p.value <= BigInt(expected)) {
        violations.push({
          checker: CHECKER,
          message: `${scope}: publish op ${p.op.id} expected generation ${expected} and answered ${p.value}`,
        });
      }
    }
    visible(scope, publishes, snapshots, violations);
  }
  return violations;
}

function unique(scope: string, what: string, points: Point[], out: Violation[]): void {
  const byValue = new Map<bigint, Point>();
  for (const p of points) {
    const other = byValue.get(p.value);
    if (other === undefined) byValue.set(p.value, p);
    else
      out.push({
        checker: CHECKER,
        message: `${scope}: ${what} ${p.value} answered twice (ops ${other.op.id} and ${p.op.id})`,
      });
  }
}

/** Each `later` point must be above every `earlier` point answered before it was asked for. */
function increasing(scope: string, what: string, earlier: Point[], later: Point[], out: Violation[]): void {
  const done = [...earlier].sort((a, b) => a.op.completeMs - b.op.completeMs);
  let i = 0;
  let top: Point | undefined;
  for (const p of [...later].sort((a, b) => a.op.invokeMs - b.op.invokeMs)) {
    while (i < done.length && done[i]!.op.completeMs < p.op.invokeMs) {
      const d = done[i++]!;
      if (top === undefined || d.value > top.value) top = d;
    }
    if (top !== undefined && p.value <= top.value) {
      out.push({
        checker: CHECKER,
        message: `${scope}: ${what} ${p.value} (op ${p.op.id}) not above ${top.value} (op ${top.op.id}, answered before it was asked)`,
      });
    }
  }
}

function visible(scope: string, publishes: Point[], snapshots: Point[], out: Violation[]): void {
  const done = [...publishes].sort((a, b) => a.op.completeMs - b.op.completeMs);
  let i = 0;
  let top: Point | undefined;
  for (const s of [...snapshots].sort((a, b) => a.op.invokeMs - b.op.invokeMs)) {
    while (i < done.length && done[i]!.op.completeMs < s.op.invokeMs) {
      const d = done[i++]!;
      if (top === undefined || d.value > top.value) top = d;
    }
    if (top === undefined) continue;
    if (s.value < top.value || (s.value === top.value && s.root !== top.root)) {
      out.push({
        checker: CHECKER,
        message: `${scope}: snapshot op ${s.op.id} shows generation ${s.value} root ${s.root} after publish op ${top.op.id} of generation ${top.value} root ${top.root} was acknowledged`,
      });
    }
  }
}
