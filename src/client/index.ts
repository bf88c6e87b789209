/**
 * The shiftlock client: the single package entry (`shiftlock/client`). Pure re-exports.
 *
 * Free of server code: everything reachable from here runs in Workers, Node ≥ 20 and
 * browsers (fetch + WebSocket), and imports only the protocol declarations
 * (src/protocol/) and the pure machines (src/core/) it shares with the server.
 * Test hooks and the runtime's internal controls are not exported from here.
 */
export { ShiftlockError, hasCode, isErrorCode, ERROR_STATUS } from "../protocol/errors.ts";
export type { ErrorCode, ErrorDetails, ErrorEnvelope } from "../protocol/errors.ts";
export { systemClock, ManualClock } from "../core/clock.ts";
export type { Clock } from "../core/clock.ts";
export { MAX_FENCING_TOKEN } from "../protocol/counter.ts";
export type { ClaimPhase, ClaimReason } from "../protocol/claims.ts";

export type * from "./claims/claims-backend.ts";
export { HttpClaimsBackend } from "./claims/http-claims-backend.ts";
export type { HttpClaimsBackendOptions, WebSocketConstructor, WebSocketLike } from "./claims/http-claims-backend.ts";
export { MemoryClaimsBackend } from "./claims/memory-claims-backend.ts";
export type { MemoryClaimsBackendOptions } from "./claims/memory-claims-backend.ts";
export { HttpTransport, isNetworkError } from "./transport/http-transport.ts";
export type { FetchLike, HttpTransportOptions } from "./transport/http-transport.ts";
export type { WatchConnectionOptions } from "./transport/websocket.ts";

// The handoff runtime (docs/protocol.md#handoff).
export * from "./handoff/index.ts";

// Coord (docs/protocol.md#coord): the Go interface's Coordinator over HTTP/WebSocket, in memory, and unsupported.
export type {
  AcquireOptions,
  BackendKind,
  Capability,
  CoordEvent,
  CoordWatch,
  Coordinator,
  EvictOptions,
  FallbackReason,
  PublishRequest,
  Scope,
  Snapshot,
  TryAcquireResult,
  WaitAcquireOptions,
  WriteLease,
} from "./coord/coord-types.ts";
export { isScopeEmpty, SCOPE_EMPTY_MESSAGE } from "./coord/coord-scope.ts";
export { HttpCoordinator } from "./coord/coord-http.ts";
export type { HttpCoordinatorOptions } from "./coord/coord-http.ts";
export { MemoryCoordinator } from "./coord/memory-coord.ts";
export type { MemoryCoordinatorOptions } from "./coord/memory-coord.ts";
export { UnsupportedCoordinator, UNSUPPORTED_MESSAGE } from "./coord/unsupported-coordinator.ts";
export type { UnsupportedCoordinatorOptions } from "./coord/unsupported-coordinator.ts";
export type { LeaseTimingOptions } from "./coord/write-lease.ts";
