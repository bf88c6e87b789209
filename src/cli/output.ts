/**
 * How `shiftlock` prints: records as aligned `key: value` lines, or one JSON object per
 * line with `--json` (64-bit counters as decimal strings, as on the wire); errors as a
 * one-line explanation per protocol error code (or the error envelope with `--json`) on stderr.
 *
 * Guarantees: every failure ends with a non-zero exit status from {@link EXIT_STATUS}
 * (the table in docs/cli.md) — 1 refused by the service, 2 usage mistake, 3 the service
 * could not be reached (the message names the URL), 5 the service failed (`internal`) or
 * something unexpected happened — so scripts can branch on `$?`. With `--json` the error
 * envelope's code is the protocol's, or one of the CLI's own two: `usage` (status 2) and
 * `unreachable` (status 3, with the `url`). A refusal names what it
 * is about where the answer says: the namespace of a missing claim or generation, the
 * holder of a claim (`claim_held`) or of a write lease (`lease_held`), a scope's current
 * generation (`stale_generation`).
 */
import { ShiftlockError, type ErrorCode } from "../protocol/errors.ts";
import { isNetworkError } from "../client/transport/http-transport.ts";
import { USAGE_EXIT_STATUS, UsageError } from "./options.mjs";

/** Exit statuses of every command (`run` adds its own: run-commands.ts, docs/cli.md). */
export const EXIT_STATUS = {
  ok: 0,
  refused: 1,
  usage: USAGE_EXIT_STATUS,
  unreachable: 3,
  /** `claims run` / `coord run`: the lease was lost while the command ran (it was stopped). */
  leaseLost: 4,
  failed: 5,
} as const;

/** Where the command was talking to, for messages. */
export interface Target {
  baseUrl: string;
  namespace: string;
}

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

/**
 * Print rows under a header, each column padded to its widest cell (two spaces between).
 * @example printTable(p, ["NAME", "PHASE"], [["ledger", "owned"]])
 */
export function printTable(p: Printer, header: readonly string[], rows: readonly (readonly string[])[]): void {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  for (const row of [header, ...rows]) {
    p.out(
      row
        .map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i] ?? 0)))
        .join("  ")
        .trimEnd(),
    );
  }
}

/** What each code means for someone at a terminal, and what to do next. */
const HINTS: Record<ErrorCode, string | ((t: Target) => string)> = {
  invalid_request: "the request was rejected as malformed",
  unsupported: "this scope does not support that operation (keyed scopes have leases only)",
  unauthorized: "missing or unknown token: pass --token or set SHIFTLOCK_TOKEN",
  forbidden: "the token may not do this (read-only token, another namespace, or evict without the admin role)",
  claim_not_found: (t) => `no such claim in namespace ${JSON.stringify(t.namespace)}: it was never acquired there`,
  generation_not_found: (t) =>
    `no such generation in namespace ${JSON.stringify(t.namespace)}: register it first (or check --namespace)`,
  not_found: (t) => `no such route at ${t.baseUrl}: is --url pointing at a shiftlock server?`,
  claim_held: "another generation owns or reserves the claim",
  not_owner: "this generation does not own the claim (it expired or moved on)",
  stale_token: "the fencing token is not the claim's current token",
  no_transfer: "no transfer is pending on the claim",
  concurrent_transfer: "a different transfer is pending on the claim",
  token_overflow: "the claim's fencing token cannot advance any further",
  no_lease: "the generation holds no live lease: keep it alive first (shiftlock generations keepalive)",
  operation_id_conflict: "that operation id was already used for a different request",
  invalid_state: "illegal generation state transition",
  generation_exists: "that generation id is registered with another service or instance",
  lease_held: "the write lease is held by another participant",
  stale_generation: "the scope's generation is not the expected one",
  evicted: "an operator evicted the owner this token belonged to: acquire the claim again",
  lease_lost: "the write lease was released, expired or superseded",
  payload_too_large: "the request body is too large",
  rate_limited: "rate limited: retry later",
  internal: "the service failed",
  overloaded: "the service is overloaded: retry after the time it names",
};

/** Print an error and return the exit status. `target` is undefined before it is known. */
export function printError(p: Printer, err: unknown, target?: Target): number {
  if (err instanceof UsageError) {
    p.err(
      p.json ? toJson({ error: { code: "usage", message: err.message } }) : `shiftlock: ${err.message} (see --help)`,
    );
    return EXIT_STATUS.usage;
  }
  if (isNetworkError(err)) {
    const url = target?.baseUrl ?? "the service";
    const why = rootCause(err);
    if (p.json) p.err(toJson({ error: { code: "unreachable", message: `cannot reach ${url}: ${why}`, url } }));
    else p.err(`shiftlock: cannot reach ${url} (${why}): is the server running, and is --url or SHIFTLOCK_URL right?`);
    return EXIT_STATUS.unreachable;
  }
  if (err instanceof ShiftlockError) {
    if (p.json) p.err(toJson(err.toEnvelope()));
    else explain(p, err, target ?? { baseUrl: "the service", namespace: "" });
    return err.code === "internal" ? EXIT_STATUS.failed : EXIT_STATUS.refused;
  }
  const message = err instanceof Error ? err.message : String(err);
  p.err(p.json ? toJson({ error: { code: "internal", message } }) : `shiftlock: ${message}`);
  return EXIT_STATUS.failed;
}

/** The code, what it means, the server's message, then what the answer names. */
function explain(p: Printer, err: ShiftlockError, target: Target): void {
  const hint = HINTS[err.code];
  const text = typeof hint === "string" ? hint : hint(target);
  const field = typeof err.details["field"] === "string" ? ` (field ${err.details["field"]})` : "";
  p.err(`shiftlock: ${err.code}: ${text}${field}`);
  if (err.message !== "" && !text.includes(err.message)) p.err(`  ${err.message}`);
  const claim = err.details["claim"];
  if (claim !== null && typeof claim === "object") {
    const c = claim as Record<string, unknown>;
    p.err(`  owner ${String(c["ownerGeneration"])} token ${String(c["fencingToken"])} phase ${String(c["phase"])}`);
  }
  const holder = err.details["holder"];
  if (err.code === "lease_held" && typeof holder === "string" && holder !== "")
    p.err(`  held by participant ${holder}`);
  const generation = err.details["generation"];
  if (err.code === "stale_generation" && typeof generation === "string") {
    p.err(`  the scope's current generation is ${generation}`);
  }
}

/** The innermost cause's message (`connect ECONNREFUSED 127.0.0.1:9`, not `fetch failed`). */
function rootCause(err: Error): string {
  let cause: unknown = err;
  while (cause instanceof Error && cause.cause instanceof Error) cause = cause.cause;
  return cause instanceof Error ? cause.message : String(cause);
}
