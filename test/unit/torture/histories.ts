/**
 * Hand-made torture histories for the checkers' unit tests: small builders for claim records,
 * operations, faults and watch messages (history.ts shapes, counters as strings).
 */
import type { FaultEntry, OpEntry, OpRoute, Outcome, WatchEntry } from "../../torture/history.ts";
import type { WireClaim } from "../../torture/check/observations.ts";
import { emptyClaim } from "../../../src/core/claim-machine.ts";
import { claimToWire } from "../../../src/protocol/claims.ts";

/** A claim record; unset fields are those of a claim that was never owned. */
export function record(fields: Partial<WireClaim> & { version: string }): WireClaim {
  return { ...claimToWire(emptyClaim("c")), ...fields };
}

/** A claim `g` owns with `token` since `atMs` for `ttlMs`, at `version`. */
export function owned(g: string, token: string, version: string, atMs: number, ttlMs: number): WireClaim {
  return record({
    ownerGeneration: g,
    fencingToken: token,
    phase: "owned",
    acquiredAtMs: atMs,
    lastHeartbeatMs: atMs,
    expiresAtMs: atMs + ttlMs,
    reason: "acquired",
    version,
  });
}

export const ok = (body: unknown, status = 200): Outcome => ({ type: "ok", status, body });
export const refused = (code: string, status = 409, extra: Record<string, unknown> = {}): Outcome => ({
  type: "error",
  status,
  code,
  body: { error: { code, message: code, ...extra } },
});
export const unknown: Outcome = { type: "unknown", reason: "TimeoutError" };

let nextId = 1;

/** An operation entry (ids increase in creation order). */
export function op(
  route: OpRoute,
  target: string,
  request: unknown,
  invokeMs: number,
  completeMs: number,
  outcome: Outcome,
  extra: { leaseId?: string; retryOf?: number; id?: number } = {},
): OpEntry {
  const { id = nextId++, ...rest } = extra;
  return { t: "op", id, client: 0, route, target, request, invokeMs, completeMs, outcome, ...rest };
}

export const fault = (kind: FaultEntry["kind"], atMs: number): FaultEntry => ({ t: "fault", kind, atMs });

export function watchMessage(watcher: string, conn: number, atMs: number, msg: unknown): WatchEntry {
  return { t: "watch", watcher, conn, atMs, kind: "message", msg };
}

export function watchOpen(watcher: string, conn: number, atMs: number, after?: string): WatchEntry {
  return { t: "watch", watcher, conn, atMs, kind: "open", ...(after === undefined ? {} : { after }) };
}
