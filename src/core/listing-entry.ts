/**
 * What an object hands its listing shard, and a shard the namespace index (docs/listing.md):
 * the object's latest listing entry and the counter increments since its last delivery.
 *
 * Guarantees: `seq` grows by one with every commit of the object (it lives in the object's
 * outbox row, which is never deleted), so the index applies an entry only when its `seq` is
 * above the one it holds for that object: a late or repeated delivery never undoes a newer one.
 *
 * Does not: carry anything secret (no lease ids, no tokens beyond the record's fencing token).
 */
import type { ClaimRecordWire } from "../protocol/claims.ts";
import type { GenerationRecordWire } from "../protocol/generations.ts";
import type { CounterName, ScopeSummaryWire } from "../protocol/listing.ts";

/** One object's row in the index. `key` is its listing key (name order). */
export type IndexEntry =
  | { kind: "claim"; key: string; record: ClaimRecordWire }
  | { kind: "generation"; key: string; record: GenerationRecordWire }
  | { kind: "scope"; key: string; record: ScopeSummaryWire };

/**
 * The fields of a record that may trail the object in the listing (docs/protocol.md): the
 * deadlines a renewal or keepalive moves, and what moves with them (a claim's heartbeat,
 * `reason` and `version`, which a renewal bumps). Everything else is followed within 2 s.
 */
const TRAILING_FIELDS: Record<IndexEntry["kind"], readonly string[]> = {
  claim: ["expiresAtMs", "lastHeartbeatMs", "reason", "version"],
  generation: ["leaseExpiresAtMs"],
  scope: ["leaseExpiresAtMs"],
};

/**
 * What the listing must follow of an entry, as text: two entries with the same fingerprint
 * differ only in fields that may trail (a renewal), so the second need not be delivered.
 */
export function listedFingerprint(entry: IndexEntry): string {
  const trailing = TRAILING_FIELDS[entry.kind];
  const shown = Object.entries(entry.record).filter(([field]) => !trailing.includes(field));
  return JSON.stringify([entry.kind, entry.key, shown]);
}

export type IndexKind = IndexEntry["kind"];

/** Counter increments: a {@link CounterName}, or `conflict:<code>` for a refused mutation. */
export type CounterDeltas = Partial<Record<CounterName | `conflict:${string}`, number>>;

/** Add `from`'s increments to `into` (a delivery's counters kept for the next one). */
export function addCounters(into: CounterDeltas, from: CounterDeltas): void {
  for (const [name, n] of Object.entries(from)) {
    if (n === undefined || n <= 0) continue;
    const key = name as keyof CounterDeltas;
    into[key] = (into[key] ?? 0) + n;
  }
}

/** One delivery from an object to its listing shard. */
export interface IndexDelivery {
  /**
   * The sending object's namespace, which is the shard's: a shard the runtime started without
   * a name learns its own from it (absent from deliveries of earlier versions).
   */
  namespace?: string;
  /** The entry and its sequence number; absent when only counters travel. */
  entry?: { seq: number; value: IndexEntry };
  counters: CounterDeltas;
  /** The object's clock when it sent this (counters are bucketed by it). */
  atMs: number;
}

/** An entry with the sequence number its object gave it. */
export interface SequencedEntry {
  seq: number;
  value: IndexEntry;
}

/** What a listing shard forwards to the namespace index: the latest entry per object, summed counters. */
export interface IndexBatch {
  entries: SequencedEntry[];
  counters: CounterDeltas;
  /** The shard's clock when it sent this (counters are bucketed by it). */
  atMs: number;
}
