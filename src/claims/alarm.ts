/**
 * The claim's alarm: drives expiry at the deadline so watchers hear `expired` without
 * anyone touching the claim (SPEC §3 "Expiry").
 *
 * Guarantees:
 * - One alarm per object, always recomputed from the saved record after every change: set
 *   to {@link nextDeadlineMs} (1 ms after `expiresAtMs`, since expiry is strict) or deleted
 *   when nothing can expire.
 * - {@link armAlarm} issues its storage call synchronously, before its first await, so the
 *   calls reach storage in commit order and the last one always matches the last saved
 *   record, even when two mutations' promises settle in another order (a read-then-write
 *   via `getAlarm` could let an older deadline overwrite a newer one).
 * - Correctness never depends on it: every access applies expiry lazily too. The handler is
 *   idempotent and safe to run early, late or twice (at-least-once delivery): it only asks
 *   the pure machine to `expire`, which changes nothing unless the deadline really passed,
 *   and then re-arms for whatever the record says now.
 *
 * Does not: persist records or publish events itself (the object's five steps do).
 */
import type { ClaimRecord } from "../protocol/claims.ts";
import { nextDeadlineMs } from "./machine.ts";

/**
 * Arm (or clear) the alarm for `record`'s deadline. Call it right after the save, before
 * any await, and await the returned promise afterwards.
 */
export function armAlarm(storage: DurableObjectStorage, record: ClaimRecord | undefined): Promise<void> {
  const deadline = nextDeadlineMs(record);
  return deadline === undefined ? storage.deleteAlarm() : storage.setAlarm(deadline);
}
