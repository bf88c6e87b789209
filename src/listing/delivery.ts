/**
 * What an object hands its namespace index (docs/listing.md): its latest listing entry and
 * the counter increments since its last delivery.
 *
 * Guarantees: `seq` grows by one with every commit of the object (it lives in the object's
 * outbox row, which is never deleted), so the index applies an entry only when its `seq` is
 * above the one it holds for that object: a late or repeated delivery never undoes a newer one.
 *
 * Does not: carry anything secret (no lease ids, no tokens beyond the record's fencing token).
 */
import type { ClaimRecordWire } from "../protocol/claims.ts";
import type { GenerationRecord } from "../protocol/generations.ts";
import type { CounterName, ScopeSummaryWire } from "../protocol/listing.ts";

/** One object's row in the index. `key` is its listing key (name order). */
export type IndexEntry =
  | { kind: "claim"; key: string; record: ClaimRecordWire }
  | { kind: "generation"; key: string; record: GenerationRecord }
  | { kind: "scope"; key: string; record: ScopeSummaryWire };

export type IndexKind = IndexEntry["kind"];

/** Counter increments: a {@link CounterName}, or `conflict:<code>` for a refused mutation. */
export type CounterDeltas = Partial<Record<CounterName | `conflict:${string}`, number>>;

/** One delivery from an object to its namespace index. */
export interface IndexDelivery {
  /** The entry and its sequence number; absent when only counters travel. */
  entry?: { seq: number; value: IndexEntry };
  counters: CounterDeltas;
  /** The object's clock when it sent this (counters are bucketed by it). */
  atMs: number;
}
