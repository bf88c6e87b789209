/**
 * The claim's alarm: drives expiry at the deadline so watchers hear `expired` without
 * anyone touching the claim (docs/protocol.md#claim-rules).
 *
 * Guarantees:
 * - After every change an alarm is armed at or before {@link nextDeadlineMs} (1 ms after
 *   `expiresAtMs`, since expiry is strict) whenever the claim can expire. It is only moved
 *   earlier ({@link AlarmSchedule}): a renew that extends the lease or a release leaves the
 *   old alarm, which then fires early or for nothing and re-arms from the saved record.
 * - Correctness never depends on it: every access applies expiry lazily too. The handler is
 *   idempotent and safe to run early, late or twice (at-least-once delivery): it only asks
 *   the pure machine to `expire`, which changes nothing unless the deadline really passed.
 *
 * Does not: persist records or publish events itself (the object's five steps do).
 */
import type { AlarmSchedule } from "../durable/alarm-schedule.ts";
import type { ClaimRecord } from "../protocol/claims.ts";
import { nextDeadlineMs } from "../core/claim-machine.ts";

/**
 * Arm the alarm for `record`'s deadline if it is not armed early enough. Call it right
 * after the save, before any await, and await the returned promise afterwards.
 */
export function armAlarm(schedule: AlarmSchedule, record: ClaimRecord | undefined): Promise<void> {
  return schedule.ensure(nextDeadlineMs(record));
}
