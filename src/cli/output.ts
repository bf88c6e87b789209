/**
 * How `shiftlock` prints: records as aligned `key: value` lines, or one JSON object per
 * line with `--json` (64-bit counters as decimal strings, as on the wire); errors as a
 * one-line explanation per protocol error code (or the error envelope with `--json`) on stderr.
 *
 * Guarantees: every failure ends with a non-zero exit status — 2 for a usage mistake,
 * 3 when the service could not be reached or failed (`internal`), 1 for every other
 * refusal — so scripts can branch on `$?`.
 */
import { ShiftlockError, type ErrorCode } from "../protocol/errors.ts";
import { USAGE_EXIT_STATUS, UsageError } from "./options.mjs";

export interface Printer {
  json: boolean;
  out(line: string): void;
  err(line: string): void;
}

/** JSON with bigint → decimal string and bytes → base64. */
export function toJson(value: unknown): string {
  return JSON.stringify(value, (_k, v: unknown) => {
    if (typeof v === "bigint") return v.toString(10);
    if (v instanceof Uint8Array) return Buffer.from(v).toString("base64");
    return v;
  });
}

/** Print a record (or several fields) for humans or as one JSON line. */
export function print(p: Printer, value: Record<string, unknown>): void {
  if (p.json) {
    p.out(toJson(value));
    return;
  }
  const flat = flatten(value);
  const width = Math.max(0, ...flat.map(([k]) => k.length));
  for (const [k, v] of flat) p.out(`${k.padEnd(width)}  ${v}`);
}

function flatten(value: Record<string, unknown>, prefix = ""): [string, string][] {
  const rows: [string, string][] = [];
  for (const [k, v] of Object.entries(value)) {
    const key = prefix + k;
    if (v !== null && typeof v === "object" && !(v instanceof Uint8Array) && !Array.isArray(v)) {
      rows.push(...flatten(v as Record<string, unknown>, `${key}.`));
    } else if (typeof v === "number" && key.endsWith("AtMs") && v > 0) {
      rows.push([key, `${v} (${new Date(v).toISOString()})`]);
    } else if (typeof v === "bigint") {
      rows.push([key, v.toString(10)]);
    } else {
      rows.push([key, typeof v === "string" ? (v === "" ? '""' : v) : toJson(v)]);
    }
  }
  return rows;
}

/** What each code means for someone at a terminal, and what to do next. */
const HINTS: Record<ErrorCode, string> = {
  invalid_request: "the request was rejected as malformed",
  unsupported: "this scope does not support that operation (keyed scopes have leases only)",
  unauthorized: "missing or unknown token: pass --token or set SHIFTLOCK_TOKEN",
  forbidden: "the token may not do this (read-only token, or another namespace)",
  claim_not_found: "no such claim: it was never acquired in this namespace",
  generation_not_found: "no such generation: register it first",
  not_found: "no such route: is --url pointing at a shiftlock server?",
  claim_held: "another generation owns or reserves the claim",
  not_owner: "this generation does not own the claim (it expired or moved on)",
  stale_token: "the fencing token is not the claim's current token",
  no_transfer: "no transfer is pending on the claim",
  concurrent_transfer: "a different transfer is pending on the claim",
  token_overflow: "the claim's fencing token cannot advance any further",
  operation_id_conflict: "that operation id was already used for a different request",
  invalid_state: "illegal generation state transition",
  generation_exists: "that generation id is registered with another service or instance",
  lease_held: "the write lease is held by another participant",
  stale_generation: "the scope's generation is not the expected one",
  evicted: "an operator evicted the owner this token belonged to: acquire the claim again",
  lease_lost: "the write lease was released, expired or superseded",
  payload_too_large: "the request body is too large",
  rate_limited: "rate limited: retry later",
  internal: "the service failed or could not be reached",
  overloaded: "the service is overloaded: retry after the time it names",
};

/** Print an error and return the exit status. */
export function printError(p: Printer, err: unknown): number {
  if (err instanceof UsageError) {
    p.err(
      p.json ? toJson({ error: { code: "usage", message: err.message } }) : `shiftlock: ${err.message} (see --help)`,
    );
    return USAGE_EXIT_STATUS;
  }
  if (err instanceof ShiftlockError) {
    if (p.json) {
      p.err(toJson(err.toEnvelope()));
    } else {
      const field = typeof err.details["field"] === "string" ? ` (field ${err.details["field"]})` : "";
      p.err(`shiftlock: ${err.code}: ${HINTS[err.code]}${field}`);
      if (err.message !== "" && !HINTS[err.code].includes(err.message)) p.err(`  ${err.message}`);
      const claim = err.details["claim"] as Record<string, unknown> | undefined;
      if (err.code === "claim_held" && claim !== undefined && typeof claim === "object") {
        p.err(
          `  owner ${String(claim["ownerGeneration"])} token ${String(claim["fencingToken"])} phase ${String(claim["phase"])}`,
        );
      }
    }
    return err.code === "internal" ? 3 : 1;
  }
  const message = err instanceof Error ? err.message : String(err);
  p.err(p.json ? toJson({ error: { code: "internal", message } }) : `shiftlock: ${message}`);
  return 3;
}
