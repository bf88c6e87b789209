/**
 * What the dashboard's "expires in" cell says for a claim record, seen at `nowMs` (pure;
 * unit-tested in test/unit/page-format.test.ts).
 *
 * Guarantees: never says "expired" for a held claim. Renewals send no watch event, so a
 * deadline the page knows may be an old one: once it has passed, the cell says the page is
 * checking (and the page asks the object: claim-row.ts) until the object answers with a
 * later deadline, or its watch reports the expiry (the phase becomes `unowned`). An unheld
 * claim has no deadline ("—").
 */
import type { ClaimRecord } from "../../protocol/claims.ts";
import { formatDuration } from "../format.ts";

/** The cell's text and whether the known deadline has passed (`due`: ask the object). */
export function expiryView(record: ClaimRecord | null, nowMs: number): { text: string; due: boolean } {
  if (record === null || record.phase === "unowned") return { text: "—", due: false };
  const left = record.expiresAtMs - nowMs;
  if (left <= 0) return { text: "checking…", due: true };
  return { text: formatDuration(left), due: false };
}
