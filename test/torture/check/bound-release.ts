/**
 * Checker: a bound claim is let go once its owner's lease epoch ends (docs/protocol.md#sessions)
 * — the other side of mutual exclusion: held no longer than the epoch lasts. The epoch had
 * certainly ended by its `endedByMs` (lease-epochs.ts: an answer showing it over, or its last
 * possible deadline, the restart rule's extensions included).
 *
 * Violations, for a record bound to epoch E of generation G that is still held:
 * - **refused past the end**: a contending acquire (another generation) asked after E had
 *   ended, and after the deadline the claim had learned, answered `claim_held` with that
 *   record. Past its learned deadline a contending acquire asks G before deciding, and G
 *   answers that E is over: the claim must expire and be granted.
 * - **held past the end**: an answer (any claim route, the listing judge's `GET`) asked more
 *   than {@link RELEASE_BOUND_MS} after G committed the end of E — and after the server last
 *   came back from a crash or a pause — still shows it. G delivers the end of E to every
 *   claim E bound right after the commit that ended it, retrying until acknowledged (and
 *   resumes what is owed after a restart): a claim nobody contends must hear it within that
 *   bound. The commit came by the first answer showing E over (a `lease/end`, a final state,
 *   a `GET` or keepalive past the deadline — lazy expiry commits the end before answering —,
 *   a channel's `ended`, a later epoch); a lapse nobody asked about is noticed only by G's alarm, up to
 *   two notice ttls past the deadline (lease-epochs.ts `committedByMs`, from
 *   src/core/generation-lease.ts `noticeAtMs`).
 *
 * Does not: judge records it cannot date (a watch message says when it arrived, not until
 * when its record stayed current), nor a bound claim whose epoch no answer bounds.
 */
import type { HistoryEntry } from "../history.ts";
import { leaseEpochs } from "./lease-epochs.ts";
import { CLOCK_SLACK_MS, claimObservations, claimOps, type Violation, type WireClaim } from "./observations.ts";

const CHECKER = "bound-release";

/**
 * How long after the commit that ended its epoch a bound claim nobody contends may still
 * show it: the end is delivered at once after the commit; a failed delivery is retried after
 * 250 ms, doubling (durable/delivery-retry.ts).
 */
export const RELEASE_BOUND_MS = 5_000;

export interface BoundReleaseResult {
  violations: Violation[];
  /** Records bound to an ended epoch that were judged (refusals and answers). */
  judged: number;
}

/** A held record bound to an epoch, or undefined. */
function boundHold(record: WireClaim | undefined): { generation: string; epoch: bigint } | undefined {
  if (record === undefined || record.bound !== true || record.phase === "unowned") return undefined;
  return { generation: record.ownerGeneration, epoch: BigInt(record.leaseEpoch ?? "0") };
}

export function checkBoundRelease(history: readonly HistoryEntry[]): BoundReleaseResult {
  const violations: Violation[] = [];
  let judged = 0;
  const epochs = leaseEpochs(history);
  const recoveries = history.flatMap((e) =>
    e.t === "fault" && (e.kind === "restart" || e.kind === "resume") ? [e.atMs] : [],
  );
  const recoveredBefore = (t: number): number => Math.max(-Infinity, ...recoveries.filter((r) => r <= t));

  // Refused past the end.
  for (const op of claimOps(history)) {
    if (op.verb !== "acquire" || op.result.type !== "error" || op.result.code !== "claim_held") continue;
    const record = op.result.claim;
    const hold = boundHold(record);
    if (hold === undefined || record === undefined || hold.generation === op.body["generationId"]) continue;
    const { endedByMs } = epochs.bounds(hold.generation, hold.epoch);
    const dueMs = Math.max(endedByMs, record.expiresAtMs) + CLOCK_SLACK_MS;
    if (!Number.isFinite(dueMs)) continue;
    judged++;
    if (op.invokeMs > dueMs) {
      violations.push({
        checker: CHECKER,
        message: `${op.claim}: acquire by ${String(op.body["generationId"])} asked at ${op.invokeMs} refused claim_held by token ${record.fencingToken} bound to ${hold.generation}'s epoch ${hold.epoch}, which had ended by ${endedByMs} (learned deadline ${record.expiresAtMs}) (op ${op.key})`,
      });
    }
  }

  // Held past the end: every answer that dates its record (asked at a known instant), listing reads included.
  const answers: { record: WireClaim; askedMs: number; source: string }[] = [];
  for (const o of claimObservations(history)) {
    if (Number.isFinite(o.invokeMs)) answers.push({ record: o.claim, askedMs: o.invokeMs, source: o.source });
  }
  for (const entry of history) {
    if (entry.t !== "listing") continue;
    for (const [name, read] of Object.entries(entry.objects.claims)) {
      if (read.readAtMs === undefined || read.value === null || read.value === undefined) continue;
      answers.push({
        record: read.value as WireClaim,
        askedMs: read.readAtMs,
        source: `listing ${entry.label} ${name}`,
      });
    }
  }
  for (const { record, askedMs, source } of answers) {
    const hold = boundHold(record);
    if (hold === undefined) continue;
    const { endedByMs, committedByMs } = epochs.bounds(hold.generation, hold.epoch);
    if (!Number.isFinite(endedByMs) || askedMs <= endedByMs) continue;
    judged++;
    const dueMs = Math.max(committedByMs, recoveredBefore(askedMs)) + RELEASE_BOUND_MS;
    if (askedMs > dueMs) {
      violations.push({
        checker: CHECKER,
        message: `${record.name}: token ${record.fencingToken} still bound to ${hold.generation}'s epoch ${hold.epoch} at version ${record.version} when asked at ${askedMs}; the epoch had ended by ${endedByMs}, its end committed by ${committedByMs} (${source})`,
      });
    }
  }
  return { violations, judged };
}
