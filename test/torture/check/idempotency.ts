/**
 * Checker: operation ids. A claim mutation retried with the same operationId (the history's
 * `retryOf`) is one operation: every attempt the server answered must carry the same
 * answer (status and body: the first response replayed), so the fencing token it reports
 * advanced at most once.
 *
 * Does not: see a duplicate application nobody was told about; the linearizability checker
 * does (it models the retried attempts as one operation, so a second application has no
 * operation to explain it).
 */
import type { HistoryEntry, OpEntry } from "../history.ts";
import type { Violation } from "./observations.ts";

const CHECKER = "idempotency";

function canonical(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    typeof v === "object" && v !== null && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : 1)))
      : v,
  );
}

export function checkIdempotency(history: readonly HistoryEntry[]): Violation[] {
  const groups = new Map<number, OpEntry[]>();
  for (const entry of history) {
    if (entry.t !== "op") continue;
    const root = entry.retryOf ?? entry.id;
    if (entry.retryOf === undefined && !groups.has(root)) groups.set(root, [entry]);
    else groups.get(root)?.push(entry);
  }
  const violations: Violation[] = [];
  for (const [root, attempts] of groups) {
    if (attempts.length < 2) continue;
    const answered = attempts.filter(
      (a) => a.outcome.type === "ok" || (a.outcome.type === "error" && a.outcome.code !== "unavailable"),
    );
    const first = answered[0];
    if (first === undefined) continue;
    const expected = canonical(first.outcome);
    for (const a of answered.slice(1)) {
      if (canonical(a.outcome) !== expected) {
        const token = (o: OpEntry): string =>
          (o.outcome as { body?: { claim?: { fencingToken?: string } } }).body?.claim?.fencingToken ?? "-";
        violations.push({
          checker: CHECKER,
          message: `operation of op ${root} (${first.route} ${first.target}): attempt ${first.id} answered ${expected} (token ${token(first)}), attempt ${a.id} answered ${canonical(a.outcome)} (token ${token(a)})`,
        });
      }
    }
  }
  return violations;
}
