/**
 * Checker: the namespace listing follows the objects (docs/protocol.md#listing) — judged at
 * every quiet point, where the listing judge (listing-probe.ts) read every object the run
 * addresses and then the whole listing and `/stats` (history.ts `listing` entries).
 *
 * A listed entry must equal its object's `GET` in every field the protocol says the listing
 * follows. Mismatches:
 * - claims: any field but a held claim's `expiresAtMs`; when the object's last change was a
 *   renewal (reason `renewed`) also its `lastHeartbeatMs`, `reason` and `version`, which the
 *   listing shows as of the last ownership change (renewals do not reach the index), so the
 *   listed version may only be lower. Owner, phase, token, successor, statuses: exact.
 * - generations: any field but `leaseExpiresAtMs`, which the listing shows as of the last
 *   listed change (keepalives do not reach the index, nor does the end of a lease that
 *   leaves the epoch as it was: docs/protocol.md#listing); `leaseEpoch` is exact.
 * - scopes: `generation` other than the snapshot's; and, once every lease and queued wait of
 *   the run has lapsed (`leasesFreeAtMs`), `held`, `holder`, `wantLock` other than
 *   false, "", false and `leaseExpiresAtMs` other than 0 (the protocol's value when not held).
 *   No route shows a scope's holder or queue, so these are judged only when time alone says
 *   what they are.
 * - missing: an object that exists (claims and generations: `GET` 200; scopes: published
 *   to, or a grant was answered) and is not listed; extra: a listed entry whose `GET` is
 *   `not found`, one the run never addresses, or one listed twice.
 * - stats: `claimsByPhase` (each phase), `generations` and `scopes` other than a recount of
 *   the listing read just before. The windowed counters (`lastMinute`, `lastHour`) are not
 *   recountable: their increments travel with deliveries and a crash loses those not yet
 *   delivered, by design (docs/listing.md), so nothing the run records predicts them.
 *
 * The bound: a difference is a mismatch only when the listing was read at least
 * {@link LISTING_LAG_MS} after the judge first read the object's current value (for a
 * scope's lease fields, after `leasesFreeAtMs` too); one found earlier is pending — the
 * judge polls until it is gone or due, and a run stopped meanwhile leaves it unjudged.
 */
import { CLAIM_PHASES } from "../../../src/protocol/claims.ts";
import type { HistoryEntry, ListingEntry, ObjectRead } from "../history.ts";
import type { Violation } from "./observations.ts";

const CHECKER = "listing";

/** How far the listing may lag the objects (docs/protocol.md#listing). */
export const LISTING_LAG_MS = 2_000;

/** One difference between the listing and the objects. */
export interface ListingMismatch {
  /** `claim c0`, `generation g1.0`, `scope v/s0`, `stats scopes`. */
  object: string;
  message: string;
  /** From this instant the listing must show it (Infinity: the object could not be read). */
  dueMs: number;
}

type Row = Record<string, unknown>;

/** A scope's identity as the judge names it: `volume/store` (`volume/store/key` when keyed). */
export function scopeName(summary: Row): string {
  const [volumeId, objectStoreId, key] = [summary["volumeId"], summary["objectStoreId"], summary["key"]].map((part) =>
    typeof part === "string" ? part : JSON.stringify(part),
  );
  const base = `${volumeId}/${objectStoreId}`;
  return key === "" || key === undefined ? base : `${base}/${key}`;
}

/** Every difference between `entry`'s listing and its objects, due or not. */
export function listingMismatches(entry: ListingEntry): ListingMismatch[] {
  const out: ListingMismatch[] = [];
  const extraDueMs = entry.quietAtMs + LISTING_LAG_MS;
  const lists: { kind: "claim" | "generation" | "scope"; reads: Record<string, ObjectRead>; rows: unknown[] }[] = [
    { kind: "claim", reads: entry.objects.claims, rows: entry.listing.claims },
    { kind: "generation", reads: entry.objects.generations, rows: entry.listing.generations },
    { kind: "scope", reads: entry.objects.scopes, rows: entry.listing.scopes },
  ];
  for (const { kind, reads, rows } of lists) {
    const listed = new Map<string, Row[]>();
    for (const row of rows as Row[]) {
      const name = kind === "claim" ? String(row["name"]) : kind === "generation" ? String(row["id"]) : scopeName(row);
      listed.set(name, [...(listed.get(name) ?? []), row]);
    }
    for (const [name, read] of Object.entries(reads)) {
      const object = `${kind} ${name}`;
      const rowsOf = listed.get(name) ?? [];
      listed.delete(name);
      if (read.value === undefined) {
        out.push({ object, message: "the judge could not read the object", dueMs: Infinity });
        continue;
      }
      if (rowsOf.length > 1) out.push({ object, message: `listed ${rowsOf.length} times`, dueMs: extraDueMs });
      const message = compareOne(kind, read.value as Row | null, rowsOf[0], entry);
      if (message === undefined) continue;
      const leaseFields = kind === "scope" && judgesLeases(entry) ? entry.leasesFreeAtMs : 0;
      out.push({ object, message, dueMs: Math.max(read.sinceMs, leaseFields) + LISTING_LAG_MS });
    }
    for (const name of listed.keys()) {
      out.push({
        object: `${kind} ${name}`,
        message: "listed, but not an object the run addresses",
        dueMs: extraDueMs,
      });
    }
  }
  out.push(...statsMismatches(entry));
  return out;
}

/** Mismatches due when the listing was read, and those still within the bound. */
export function listingVerdict(entry: ListingEntry): { mismatches: ListingMismatch[]; pending: ListingMismatch[] } {
  const all = listingMismatches(entry);
  return {
    mismatches: all.filter((m) => entry.listingAtMs >= m.dueMs),
    pending: all.filter((m) => entry.listingAtMs < m.dueMs),
  };
}

/** Every quiet point of `history`: mismatches (violations), objects compared, pending ones left unjudged. */
export function checkListing(history: readonly HistoryEntry[]): {
  violations: Violation[];
  checks: number;
  compared: number;
  unjudged: number;
} {
  const violations: Violation[] = [];
  let checks = 0;
  let compared = 0;
  let unjudged = 0;
  for (const entry of history) {
    if (entry.t !== "listing") continue;
    checks++;
    compared += Object.values(entry.objects).reduce((n, reads) => n + Object.keys(reads).length, 0);
    const { mismatches, pending } = listingVerdict(entry);
    unjudged += pending.length;
    for (const m of mismatches) {
      violations.push({ checker: CHECKER, message: `${entry.label}: ${m.object}: ${m.message}` });
    }
  }
  return { violations, checks, compared, unjudged };
}

function judgesLeases(entry: ListingEntry): boolean {
  return entry.listingAtMs >= entry.leasesFreeAtMs;
}

/** What is wrong with one object's listed row (undefined: nothing). */
function compareOne(
  kind: "claim" | "generation" | "scope",
  truth: Row | null,
  row: Row | undefined,
  entry: ListingEntry,
): string | undefined {
  if (kind === "scope") return compareScope(truth as { generation: string; mustList: boolean }, row, entry);
  if (truth === null) {
    return row === undefined ? undefined : `listed (${brief(row)}), but its GET answers not found`;
  }
  if (row === undefined) return `missing: GET answers ${brief(truth)}, not listed`;
  const excepted = new Set<string>();
  if (kind === "generation") excepted.add("leaseExpiresAtMs");
  if (kind === "claim") {
    if (truth["phase"] !== "unowned") excepted.add("expiresAtMs");
    if (truth["reason"] === "renewed") {
      for (const field of ["lastHeartbeatMs", "reason", "version"]) excepted.add(field);
      if (BigInt(String(row["version"])) > BigInt(String(truth["version"]))) {
        return `listed version ${String(row["version"])} is above the object's ${String(truth["version"])}`;
      }
    }
  }
  return differences(truth, row, excepted);
}

function compareScope(
  truth: { generation: string; mustList: boolean },
  row: Row | undefined,
  entry: ListingEntry,
): string | undefined {
  if (row === undefined) {
    return truth.mustList ? `missing: generation ${truth.generation} and granted before, not listed` : undefined;
  }
  const expected: Row = { key: "", generation: truth.generation };
  if (judgesLeases(entry)) Object.assign(expected, { held: false, holder: "", wantLock: false, leaseExpiresAtMs: 0 });
  return differences(expected, row, new Set(), Object.keys(expected));
}

/** The fields (all of both, or `only`) in which `row` differs from `truth`, described; undefined when none. */
function differences(truth: Row, row: Row, excepted: ReadonlySet<string>, only?: string[]): string | undefined {
  const fields = only ?? [...new Set([...Object.keys(truth), ...Object.keys(row)])];
  const differ = fields.filter((f) => !excepted.has(f) && JSON.stringify(truth[f]) !== JSON.stringify(row[f]));
  if (differ.length === 0) return undefined;
  const each = differ.map((f) => `${f} listed ${JSON.stringify(row[f])}, object ${JSON.stringify(truth[f])}`);
  return `differs: ${each.join("; ")}`;
}

/** A short description of a claim or generation record. */
function brief(record: Row): string {
  if ("phase" in record) {
    return `phase ${String(record["phase"])}, owner ${JSON.stringify(record["ownerGeneration"])}, version ${String(record["version"])}`;
  }
  return `state ${String(record["state"])}`;
}

/** `/stats` tallies against a recount of the listing read just before it. */
function statsMismatches(entry: ListingEntry): ListingMismatch[] {
  const reads = Object.values(entry.objects).flatMap((r) => Object.values(r));
  const dueMs = Math.max(entry.quietAtMs, ...reads.map((r) => r.sinceMs)) + LISTING_LAG_MS;
  const stats = entry.listing.stats as {
    claimsByPhase?: Record<string, number>;
    generations?: number;
    scopes?: number;
  } | null;
  if (stats === null || typeof stats !== "object") {
    return [{ object: "stats", message: "the judge could not read /stats", dueMs: Infinity }];
  }
  const recount: Record<string, number> = {};
  for (const phase of [...CLAIM_PHASES, ...Object.keys(stats.claimsByPhase ?? {})]) recount[phase] = 0;
  for (const row of entry.listing.claims as Row[]) {
    const phase = String(row["phase"]);
    recount[phase] = (recount[phase] ?? 0) + 1;
  }
  const tallies: [string, unknown, number][] = [
    ...Object.entries(recount).map(([phase, n]): [string, unknown, number] => [
      `claimsByPhase.${phase}`,
      stats.claimsByPhase?.[phase],
      n,
    ]),
    ["generations", stats.generations, entry.listing.generations.length],
    ["scopes", stats.scopes, entry.listing.scopes.length],
  ];
  return tallies
    .filter(([, shown, counted]) => shown !== counted)
    .map(([name, shown, counted]) => ({
      object: `stats ${name}`,
      message: `/stats shows ${JSON.stringify(shown)}, the listing holds ${counted}`,
      dueMs,
    }));
}
