/**
 * The handoff runtime (docs/protocol.md#handoff): generation sessions that keep one lease
 * (docs/protocol.md#sessions), claim leases bound to it that signal loss, drain groups, and
 * two-phase handoff to a successor.
 * See docs/handoff.md.
 */
export { GenerationSession, type CloseOptions } from "./session.ts";
export type { GenerationSessionConfig } from "./config.ts";
export { ClaimHandle } from "./claim-handle.ts";
export type { ClaimAcquireOptions, ClaimWaitOptions } from "./session-claim.ts";
export { Lease } from "./lease.ts";
export { DrainGroup } from "./drain-group.ts";
export { Handoff } from "./handoff.ts";
export type { DrainPoint, HandoffStatus, HandoffResult, HandedOffClaim, StepOptions } from "./handoff-types.ts";
export type { LeaseEndReason, RuntimeEvent, RuntimeEventMap, RuntimeEventType, RuntimeListener } from "./events.ts";
