/**
 * Scope checks and scope paths, shared by every coordinator implementation.
 *
 * Guarantees: a scope is checked the same way by the HTTP and in-memory coordinators
 * before anything else happens: invalid names are `invalid_request` naming the field; a
 * scope with neither `objectStoreId` nor `key` is the Go interface's ErrScopeEmpty, reported as
 * `invalid_request` with `details.reason === "scope_empty"` (test with {@link isScopeEmpty}).
 * A checked scope names its declared route family ({@link scopeRoutes}), whose paths the
 * transport fills with percent-encoded names, so `/` inside a name never changes the route.
 *
 * Does not: talk to the network.
 */
import { DEFAULT_LEASE_TTL_MS } from "../../protocol/coord.ts";
import { ShiftlockError } from "../../protocol/errors.ts";
import { nameProblem } from "../../protocol/names.ts";
import { SCOPE_ROUTE_FAMILIES, type ScopeRoutes } from "../../protocol/scope-routes.ts";
import { encodeBody } from "../transport/route-codec.ts";
import type { Scope } from "./coord-types.ts";

/** The message text of the Go interface's ErrScopeEmpty. */
export const SCOPE_EMPTY_MESSAGE = "coord: scope has no object store id and no key";

/** True when `err` is the scope-empty error (the Go interface's ErrScopeEmpty). */
export function isScopeEmpty(err: unknown): err is ShiftlockError {
  return err instanceof ShiftlockError && err.code === "invalid_request" && err.details["reason"] === "scope_empty";
}

/** A scope after validation: empty optional fields normalised to `""`. */
export interface CheckedScope {
  volumeId: string;
  objectStoreId: string;
  key: string;
  participantId: string;
  /** Keyed scopes have mutual exclusion only (no generation, root or watch). */
  keyed: boolean;
}

function checkName(field: string, value: string): void {
  const problem = nameProblem(value);
  if (problem !== undefined) throw new ShiftlockError("invalid_request", `${field} ${problem}`, { field });
}

/**
 * Validate a scope. `participant` says whether the participant id must be a valid name
 * (acquire) or may be empty (reads).
 */
export function checkScope(scope: Scope, participant: "required" | "optional" = "optional"): CheckedScope {
  const objectStoreId = scope.objectStoreId ?? "";
  const key = scope.key ?? "";
  checkName("volumeId", scope.volumeId);
  if (objectStoreId === "" && key === "") {
    throw new ShiftlockError("invalid_request", SCOPE_EMPTY_MESSAGE, { field: "objectStoreId", reason: "scope_empty" });
  }
  if (objectStoreId !== "") checkName("objectStoreId", objectStoreId);
  if (key !== "") checkName("key", key);
  if (participant === "required" || scope.participantId !== "") checkName("participantId", scope.participantId);
  return { volumeId: scope.volumeId, objectStoreId, key, participantId: scope.participantId, keyed: key !== "" };
}

/**
 * The declared routes that address `scope` (src/protocol/scope-routes.ts): the object-store
 * family, or a keyed family under the volume or under the store.
 */
export function scopeRoutes(scope: CheckedScope): ScopeRoutes {
  if (scope.key === "") return SCOPE_ROUTE_FAMILIES.store;
  return scope.objectStoreId === "" ? SCOPE_ROUTE_FAMILIES.volumeKey : SCOPE_ROUTE_FAMILIES.storeKey;
}

/** The path parameters of a scope (a family ignores those its path does not name). */
export function scopeParams(scope: CheckedScope): { volumeId: string; objectStoreId: string; key: string } {
  return { volumeId: scope.volumeId, objectStoreId: scope.objectStoreId, key: scope.key };
}

/** The Go interface's ErrUnsupported for an operation a keyed scope does not have. */
export function keyedUnsupported(operation: string): ShiftlockError {
  return new ShiftlockError("unsupported", `coord: unsupported: ${operation} on a keyed scope`);
}

/** The participant a `lease_held` refusal names as holder (its `details.holder`), or `""`. */
export function leaseHolderOf(details: Readonly<Record<string, unknown>> = {}): string {
  const holder = details["holder"];
  return typeof holder === "string" ? holder : "";
}

/**
 * Validate acquire options with the route's own schema (ttl 100 ms … 24 h, waitMs 0 … 24 h),
 * before any request or queueing; returns the effective ttl (default 15 s).
 */
export function checkAcquireOptions(
  scope: CheckedScope,
  ttlMs: number | undefined,
  waitMs: number | undefined,
): number {
  encodeBody(scopeRoutes(scope).acquire, { participantId: scope.participantId, ttlMs, waitMs });
  return ttlMs ?? DEFAULT_LEASE_TTL_MS;
}
