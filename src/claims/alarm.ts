/**
 * The claim's alarm: drives expiry at the deadline so watchers hear `expired` without
 * anyone touching the claim (SPEC §3 "Expiry").
 *
 * Guarantees:
 * - One alarm per object, always recomputed from the saved record after every change: set
 *   to {@link nextDeadlineMs} (1 ms after `expiresAtMs`, since expiry is strict) or deleted
 *   when nothing can expire.
 * - Correctness never depends on it: every access applies expiry lazily too. The handler is
 *   idempotent and safe to run early, late or twice (at-least-once delivery): it only asks
 *   the pure machine to `expire`, which changes nothing unless the deadline really passed,
 *   and then re-arms for whatever the record says now.
 *
 * Does not: persist records or publish events itself (the object's five steps do).
 */
import type { ClaimRecord } from "../protocol/claims.ts";
import { nextDeadlineMs } from "./machine.ts";

/** Arm (or clear) the alarm for `record`'s deadline. */
export async function armAlarm(storage: DurableObjectStorage, record: ClaimRecord | undefined): Promise<void> {
  const deadline = nextDeadlineMs(record);
  if (deadline === undefined) {
    await storage.deleteAlarm();
    return;
  }
  const armed = await storage.getAlarm();
  if (armed !== deadline) await storage.setAlarm(deadline);
}
