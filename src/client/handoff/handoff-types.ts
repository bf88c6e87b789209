/**
 * The shapes of a handoff (handoff.ts): its status, what the successor receives, and its
 * options.
 */
import type { ClaimRecord } from "../../protocol/claims.ts";

export type HandoffStatus =
  "pending" | "draining" | "drained" | "transferring" | "prepared" | "committing" | "committed" | "aborted";

/** One claim as the successor receives it. */
export interface HandedOffClaim {
  claim: string;
  /** The old generation's token. */
  previousToken: bigint;
  /** The successor's token (previousToken + 1). */
  token: bigint;
  record: ClaimRecord;
  /**
   * Local clock: the server keeps an unbound claim for the successor at least until then. A
   * bound one (`record.bound`) is kept while the successor's lease epoch is live instead.
   */
  deadlineMs: number;
}

export interface HandoffResult {
  successor: string;
  claims: HandedOffClaim[];
}

export interface StepOptions {
  signal?: AbortSignal | undefined;
}

/**
 * When a handoff drains the old owner's work: `before-prepare` (the default: drain →
 * prepare → commit) or `before-commit` (prepare while work continues → drain → commit).
 * Either way nothing of the old owner is in flight when the commit is sent, and fencing
 * refuses its tokens after it; `before-commit` takes one round trip out of the time no one
 * writes.
 */
export type DrainPoint = "before-prepare" | "before-commit";
