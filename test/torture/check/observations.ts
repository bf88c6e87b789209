/**
 * What the checkers read out of a history: claim operations (single routes and batch ops,
 * retries merged into one logical operation) and observed claim records (every record a
 * response or a watch message carried), each with its real-time window.
 *
 * Guarantees:
 * - A retry with the same operationId (`retryOf`) is merged with its first attempt: invoked
 *   when the first attempt was, completed when the last attempt did, with the last known
 *   outcome (an answered attempt wins over an ambiguous one).
 * - An operation without an answer completes at +Infinity (it may take effect any time
 *   later); refused connections (`unavailable`) are dropped: they had no effect.
 * - A watch message is an observation whose window is (−∞, its receive time]; a retry's
 *   answer is one whose window opens when the first attempt was asked (it may be a replay).
 */
import type { HistoryEntry, OpEntry, OpRoute, Outcome } from "../history.ts";

/**
 * How long after it was asked an unanswered operation may still take effect when no crash
 * ends it first: far beyond the longest pause (3.5 s) plus the client timeout.
 */
export const UNKNOWN_WINDOW_MS = 60_000;
/** Clock slack (ms) between the client's and the server's readings of one instant. */
export const CLOCK_SLACK_MS = 5;

/** A claim record exactly as on the wire (counters as decimal strings). */
export interface WireClaim {
  name: string;
  ownerGeneration: string;
  fencingToken: string;
  phase: string;
  acquiredAtMs: number;
  expiresAtMs: number;
  previousOwner: string;
  pendingSuccessor: string;
  drainStatus: string;
  transferStatus: string;
  lastHeartbeatMs: number;
  reason: string;
  version: string;
  /** Held under its owner's lease epoch (docs/protocol.md#sessions); absent from histories before sessions. */
  bound?: boolean | undefined;
  leaseEpoch?: string | undefined;
}

export type ClaimVerb = "acquire" | "renew" | "release" | "prepare" | "commit" | "abort" | "get";

/** One logical claim operation. */
export interface ClaimOp {
  /** The history id of its (first) attempt; batch ops add `.index`. */
  key: string;
  claim: string;
  verb: ClaimVerb;
  body: Record<string, unknown>;
  invokeMs: number;
  completeMs: number;
  /** ok: the record; error: the code; unknown: no answer. */
  result:
    | { type: "ok"; claim: WireClaim }
    /** `claim`: the record a refusal carried (claim_held carries the claim as it stood). */
    | { type: "error"; code: string; claim?: WireClaim }
    | { type: "unknown" };
  /** History ids of every attempt. */
  attempts: number[];
  /** When the last attempt was asked (a retry may take effect after an earlier crash). */
  lastInvokeMs: number;
}

/** A claim record someone saw, and when. */
export interface ClaimObservation {
  claim: WireClaim;
  /** Where: `op <id>` or `watch <watcher>#<conn>`. */
  source: string;
  invokeMs: number;
  completeMs: number;
  /** True when the record answered a mutation to the caller (an acknowledgement). */
  acknowledged: boolean;
}

const CLAIM_VERBS: ReadonlySet<OpRoute> = new Set(["acquire", "renew", "release", "prepare", "commit", "abort", "get"]);

function claimOf(body: unknown): WireClaim | undefined {
  if (typeof body !== "object" || body === null) return undefined;
  const claim = (body as { claim?: unknown }).claim;
  return typeof claim === "object" && claim !== null ? (claim as WireClaim) : undefined;
}

function resultOf(status: number, body: unknown): ClaimOp["result"] {
  if (status >= 200 && status < 300) {
    const claim = claimOf(body);
    return claim === undefined ? { type: "unknown" } : { type: "ok", claim };
  }
  const error = (body as { error?: { code?: string } } | null)?.error;
  const claim = claimOf(error);
  return { type: "error", code: error?.code ?? "?", ...(claim === undefined ? {} : { claim }) };
}

function outcomeResult(outcome: Outcome): ClaimOp["result"] | undefined {
  if (outcome.type === "unknown") return { type: "unknown" };
  if (outcome.type === "error" && outcome.code === "unavailable") return undefined;
  return resultOf(outcome.status, outcome.body);
}

/** Claim operations of `history`, retries merged, refused calls dropped. */
export function claimOps(history: readonly HistoryEntry[]): ClaimOp[] {
  const ops = new Map<string, ClaimOp>();
  for (const entry of history) {
    if (entry.t !== "op") continue;
    if (CLAIM_VERBS.has(entry.route)) addSingle(ops, entry);
    else if (entry.route === "batch") addBatch(ops, entry);
  }
  return [...ops.values()].map((op) => (op.result.type === "unknown" ? { ...op, completeMs: Infinity } : op));
}

function addSingle(ops: Map<string, ClaimOp>, entry: OpEntry): void {
  const result = outcomeResult(entry.outcome);
  const key = String(entry.retryOf ?? entry.id);
  const first = ops.get(key);
  if (first !== undefined) {
    first.attempts.push(entry.id);
    first.lastInvokeMs = entry.invokeMs;
    first.completeMs = Math.max(first.completeMs, entry.completeMs);
    if (result !== undefined && result.type !== "unknown") first.result = result;
    return;
  }
  if (result === undefined) return; // refused: never happened
  ops.set(key, {
    key,
    claim: entry.target,
    verb: entry.route as ClaimVerb,
    body: (entry.request ?? {}) as Record<string, unknown>,
    invokeMs: entry.invokeMs,
    completeMs: entry.completeMs,
    result,
    attempts: [entry.id],
    lastInvokeMs: entry.invokeMs,
  });
}

function addBatch(ops: Map<string, ClaimOp>, entry: OpEntry): void {
  const request = entry.request as { ops: ({ op: ClaimVerb; claim: string } & Record<string, unknown>)[] };
  if (entry.outcome.type === "error") return; // the whole batch was refused (or never sent)
  const results =
    entry.outcome.type === "ok" ? (entry.outcome.body as { results: { status: number; body: unknown }[] }).results : [];
  request.ops.forEach((item, index) => {
    const { op, claim, ...body } = item;
    const answered = results[index];
    ops.set(`${entry.id}.${index}`, {
      key: `${entry.id}.${index}`,
      claim,
      verb: op,
      body,
      invokeMs: entry.invokeMs,
      completeMs: entry.completeMs,
      result: answered === undefined ? { type: "unknown" } : resultOf(answered.status, answered.body),
      attempts: [entry.id],
      lastInvokeMs: entry.invokeMs,
    });
  });
}

/** Every claim record in `history`: answers (ok and refusals that carry one) and watch messages. */
export function claimObservations(history: readonly HistoryEntry[]): ClaimObservation[] {
  const seen: ClaimObservation[] = [];
  const add = (
    claim: WireClaim | undefined,
    source: string,
    invokeMs: number,
    completeMs: number,
    ack: boolean,
  ): void => {
    if (claim !== undefined) seen.push({ claim, source, invokeMs, completeMs, acknowledged: ack });
  };
  // A retry's answer may be the first attempt's, replayed: its window opens with the first attempt.
  const invoked = new Map<number, number>();
  for (const entry of history) {
    if (entry.t === "op") {
      if (entry.retryOf === undefined) invoked.set(entry.id, entry.invokeMs);
      const invokeMs = entry.retryOf === undefined ? entry.invokeMs : (invoked.get(entry.retryOf) ?? entry.invokeMs);
      const o = entry.outcome;
      if (o.type === "unknown") continue;
      if (CLAIM_VERBS.has(entry.route)) {
        const ack = o.type === "ok" && entry.route !== "get";
        add(
          claimOf(o.type === "ok" ? o.body : (o.body as { error?: unknown } | null)?.error),
          `op ${entry.id}`,
          invokeMs,
          entry.completeMs,
          ack,
        );
      } else if (entry.route === "batch" && o.type === "ok") {
        for (const r of (o.body as { results: { status: number; body: unknown }[] }).results) {
          const body = r.status === 200 ? r.body : (r.body as { error?: unknown } | null)?.error;
          add(claimOf(body), `op ${entry.id}`, entry.invokeMs, entry.completeMs, r.status === 200);
        }
      }
    } else if (entry.t === "watch" && entry.kind === "message" && entry.watcher.startsWith("claim:")) {
      const msg = entry.msg as { type?: string; claim?: WireClaim | null };
      if ((msg.type === "event" || msg.type === "snapshot") && msg.claim !== null && msg.claim !== undefined) {
        add(msg.claim, `watch ${entry.watcher}#${entry.conn}`, -Infinity, entry.atMs, false);
      }
    }
  }
  return seen;
}

/** Group by a key, keeping order. */
export function groupBy<T>(items: readonly T[], key: (item: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const k = key(item);
    const group = groups.get(k);
    if (group === undefined) groups.set(k, [item]);
    else group.push(item);
  }
  return groups;
}

/** A violation a checker found: which checker, and a sentence with the evidence. */
export interface Violation {
  checker: string;
  message: string;
}
