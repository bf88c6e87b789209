/**
 * The shiftlock client: the single package entry (`shiftlock/client`). Pure re-exports.
 *
 * Free of server code: everything reachable from here runs in Workers, Node ≥ 20 and
 * browsers (fetch + WebSocket), and shares the pure machines with the server.
 */
export { ShiftlockError, hasCode, isErrorCode, ERROR_STATUS } from "../protocol/errors.ts";
export type { ErrorCode, ErrorDetails, ErrorEnvelope } from "../protocol/errors.ts";
export { systemClock, ManualClock } from "../protocol/clock.ts";
export type { Clock } from "../protocol/clock.ts";
export { MAX_FENCING_TOKEN } from "../protocol/counter.ts";
export type { ClaimPhase, ClaimReason } from "../protocol/claims.ts";

export type * from "./claims-backend.ts";
export { HttpClaimsBackend } from "./http-claims-backend.ts";
export type { HttpClaimsBackendOptions, WebSocketConstructor, WebSocketLike } from "./http-claims-backend.ts";
export { MemoryClaimsBackend } from "./memory-claims-backend.ts";
export type { MemoryClaimsBackendOptions } from "./memory-claims-backend.ts";
export { HttpTransport, isNetworkError } from "./http-transport.ts";
export type { FetchLike, HttpTransportOptions } from "./http-transport.ts";

// The handoff runtime (SPEC §3 "Handoff").
export * from "./handoff/index.ts";

// Coord (SPEC §4): the seed's Coordinator over HTTP/WebSocket, in memory, and unsupported.
export type {
  AcquireOptions,
  BackendKind,
  Capability,
  CoordEvent,
  CoordWatch,
  Coordinator,
  FallbackReason,
  PublishRequest,
  Scope,
  Snapshot,
  TryAcquireResult,
  WaitAcquireOptions,
  WriteLease,
} from "./coord-types.ts";
export { isScopeEmpty, SCOPE_EMPTY_MESSAGE } from "./coord-scope.ts";
export { HttpCoordinator } from "./coord-http.ts";
export type { HttpCoordinatorOptions } from "./coord-http.ts";
export { MemoryCoordinator } from "./memory-coord.ts";
export type { MemoryCoordinatorOptions } from "./memory-coord.ts";
export { UnsupportedCoordinator, UNSUPPORTED_MESSAGE } from "./unsupported-coordinator.ts";
export type { UnsupportedCoordinatorOptions } from "./unsupported-coordinator.ts";
export type { LeaseTimingOptions } from "./write-lease.ts";
