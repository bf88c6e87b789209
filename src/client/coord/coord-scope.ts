/**
 * Scope checks and scope paths, shared by every coordinator implementation.
 *
 * Guarantees: a scope is checked the same way by the HTTP and in-memory coordinators
 * before anything else happens: invalid names are `invalid_request` naming the field; a
 * scope with neither `objectStoreId` nor `key` is the seed's ErrScopeEmpty, reported as
 * `invalid_request` with `details.reason === "scope_empty"` (test with {@link isScopeEmpty}).
 * Paths percent-encode every name, so `/` inside a name never changes the route.
 *
 * Does not: talk to the network.
 */
import { DEFAULT_LEASE_TTL_MS, acquireBodySchema } from "../../protocol/coord.ts";
import { ShiftlockError } from "../../protocol/errors.ts";
import { nameProblem } from "../../protocol/names.ts";
import { invalidFromZod } from "../../protocol/zod-invalid.ts";
import type { Scope } from "./coord-types.ts";

/** The message text of the seed's ErrScopeEmpty. */
export const SCOPE_EMPTY_MESSAGE = "coord: scope has no object store id and no key";

/** True when `err` is the scope-empty error (the seed's ErrScopeEmpty). */
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
 * Path segments of a scope under `/v1/ns/{ns}`: `volumes/{v}[/stores/{s}][/keys/{k}]`.
 * The transport percent-encodes each segment (a `/` inside a name travels as `%2F`).
 */
export function scopeSegments(scope: CheckedScope): string[] {
  const segments = ["volumes", scope.volumeId];
  if (scope.objectStoreId !== "") segments.push("stores", scope.objectStoreId);
  if (scope.key !== "") segments.push("keys", scope.key);
  return segments;
}

/** The seed's ErrUnsupported for an operation a keyed scope does not have. */
export function keyedUnsupported(operation: string): ShiftlockError {
  return new ShiftlockError("unsupported", `coord: unsupported: ${operation} on a keyed scope`);
}

/** Reject an already-aborted signal the way every coordinator call does first. */
export function throwIfAborted(signal: AbortSignal | undefined): void {
  signal?.throwIfAborted();
}

/**
 * Validate acquire options with the server's own schema (ttl 100 ms … 24 h, waitMs 0 … 24 h);
 * returns the effective ttl (default 15 s).
 */
export function checkAcquireOptions(
  scope: CheckedScope,
  ttlMs: number | undefined,
  waitMs: number | undefined,
): number {
  const body: Record<string, unknown> = { participantId: scope.participantId };
  if (ttlMs !== undefined) body["ttlMs"] = ttlMs;
  if (waitMs !== undefined) body["waitMs"] = waitMs;
  const parsed = acquireBodySchema.safeParse(body);
  if (!parsed.success) throw invalidFromZod(parsed.error, "body");
  return parsed.data.ttlMs ?? DEFAULT_LEASE_TTL_MS;
}
