/**
 * What the dashboard's "expires in" cell says for a claim record, seen at `nowMs` (pure;
 * unit-tested in test/unit/page-format.test.ts).
 *
 * Guarantees: never says "expired" for a held claim. Renewals send no watch event, so a
 * deadline the page knows may be an old one: once it has passed, the cell says the page is
 * checking (and the page asks the object: claim-row.ts) until the object answers with a
 * later deadline, or its watch reports the expiry (the phase becomes `unowned`). An unheld
 * claim has no deadline ("—"). A bound claim (docs/protocol.md#sessions) counts down to its
 * owner generation's lease deadline as `GET …/generations/{id}` answered it (exact when read;
 * the claim's own `expiresAtMs` may trail keepalives), marked "lease"; until that answer, or
 * once the lease it names is another epoch or over, the cell is checking.
 */
import type { ClaimRecord } from "../../protocol/claims.ts";
import { formatDuration } from "../format.ts";

/** The lease of a bound claim's owner as its generation answered it. */
export interface LeaseSeen {
  epoch: bigint;
  /** 0 when the generation holds no lease. */
  expiresAtMs: number;
}

/** The cell's text and whether the known deadline has passed (`due`: ask the object). */
export function expiryView(
  record: ClaimRecord | null,
  nowMs: number,
  lease?: LeaseSeen,
): { text: string; due: boolean } {
  if (record === null || record.phase === "unowned") return { text: "—", due: false };
  if (record.bound) {
    if (lease === undefined || lease.epoch !== record.leaseEpoch || lease.expiresAtMs === 0) {
      return { text: "checking…", due: true };
    }
    const left = lease.expiresAtMs - nowMs;
    return left <= 0 ? { text: "checking…", due: true } : { text: `${formatDuration(left)} (lease)`, due: false };
  }
  const left = record.expiresAtMs - nowMs;
  if (left <= 0) return { text: "checking…", due: true };
  return { text: formatDuration(left), due: false };
}
