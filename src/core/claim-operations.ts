/**
 * Operation-id replay for claim mutations (docs/protocol.md#operation-ids).
 *
 * Guarantees: a retry with the same id and the same request gets the first response again
 * (same status and body) with no side effect; the same id with a different route or body
 * is `operation_id_conflict`. Only successes and 409 outcomes are remembered. Records are
 * kept for at least {@link OPERATION_RETENTION_COUNT} operations *and* at least
 * {@link OPERATION_RETENTION_MS}: a record is pruned only when both are exceeded.
 *
 * Does not: store anything itself (the Durable Object store and the in-memory backend do),
 * or deduplicate across claims (ids are scoped to one claim).
 */
import { ERROR_STATUS, errorEnvelope } from "../protocol/errors.ts";
import type { WireResponse } from "../protocol/wire-response.ts";

export const OPERATION_RETENTION_COUNT = 1000;
export const OPERATION_RETENTION_MS = 60 * 60 * 1000;

export interface OperationRecord {
  operationId: string;
  /** Route plus canonical body without the operation id. */
  fingerprint: string;
  response: WireResponse;
  atMs: number;
}

/** A stable fingerprint of a request: key order and the operation id do not matter. */
export function requestFingerprint(route: string, body: object): string {
  return `${route} ${canonicalJson({ ...body, operationId: undefined })}`;
}

function canonicalJson(value: unknown): string {
  if (typeof value === "bigint") return JSON.stringify(value.toString());
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(",")}}`;
  }
  return JSON.stringify(value);
}

/** Which responses are remembered for replay. */
export function isRememberedStatus(status: number): boolean {
  return (status >= 200 && status < 300) || status === 409;
}

/**
 * Decide what a request with a known operation id gets: the stored response, or the
 * conflict error when the id was used for a different request.
 */
export function replay(record: OperationRecord, fingerprint: string): WireResponse {
  if (record.fingerprint === fingerprint) return record.response;
  return {
    status: ERROR_STATUS.operation_id_conflict,
    body: errorEnvelope("operation_id_conflict", undefined, { operationId: record.operationId }),
  };
}

/** True when a record at `atMs` may be pruned, given `newerCount` records newer than it. */
export function isPrunable(atMs: number, newerCount: number, nowMs: number): boolean {
  return newerCount >= OPERATION_RETENTION_COUNT && nowMs - atMs > OPERATION_RETENTION_MS;
}
