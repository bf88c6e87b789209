/**
 * Durable state of one coord scope in the object's SQLite storage.
 *
 * Guarantees:
 * - One row (`scope_state`, id 1) holds the scope identity, the last granted epoch, the
 *   generation, the root, the last key prefix and the holder. Nothing ever deletes it, so
 *   the epoch (the write lease's fencing token) and the generation never go back across
 *   restarts, evictions or deploys. Counters are stored as decimal text (they exceed
 *   SQLite's signed 64-bit integers).
 * - The epoch moves only through a guarded `UPDATE … SET epoch = ? WHERE id = 1 AND epoch = ?`
 *   with a row-count check, +1 per grant the decision made (a step can grant twice: an
 *   expired lease passed on, then a grant whose caller left passed on again); the last step
 *   is the state update itself (one row written for a grant). Every other field is written
 *   only where the stored epoch and generation are still the ones the decision started from. Anything else aborts the transaction: `internal`, a bug, never a
 *   silently reused or lowered token.
 * - Every save is one `transactionSync`: state row, publish history and its trimming, and the
 *   listing index's outbox row commit together or not at all.
 * - The schema follows the one migration rule of durable/migrations.ts ({@link SCOPE_SCHEMA},
 *   created at start-up; a newer schema is refused).
 * - At least the last `RETAINED_EVENTS` (protocol/watch.ts) publishes are retained (with
 *   the generation each one started from) so a watch can tell whether history reaches back
 *   to its `afterGeneration`; they are pruned in batches (durable/history-pruning.ts): one
 *   publish in 64 deletes the 64 beyond the bound (the history holds 256–319).
 *
 * Does not: keep the waiter queue. Waiters are requests held open in this instance's memory;
 * after a restart their callers have already seen the call fail, so a persisted queue would
 * only hand the lease to nobody.
 */
import { type CoordEvent, type ScopeId, eventToWire } from "../protocol/coord.ts";
import { encodeOnce } from "../protocol/encode-once.ts";
import { pruneThroughSeq } from "../durable/history-pruning.ts";
import { formatCounter } from "../protocol/counter.ts";
import { ShiftlockError } from "../protocol/errors.ts";
import type { ScopeStep } from "../core/scope-machine.ts";
import { type HeldLease, type ScopeState, emptyScopeState } from "../core/scope-state.ts";
import { planReplay } from "../core/scope-replay.ts";
import { OUTBOX_DELIVERED_MIGRATION, OUTBOX_MIGRATION, OUTBOX_NAMESPACE_MIGRATION } from "../durable/index-outbox.ts";
import { MigratedStore, type StoreSchema, hasTable } from "../durable/migrations.ts";

/** The JSON text of a watch event, as stored for replay and as sent: rendered once per event. */
export const eventText: (event: CoordEvent) => string = encodeOnce((event: CoordEvent) =>
  JSON.stringify(eventToWire(event)),
);

/** The scope store's schema, created at start-up (not lazily: a scope's first request reads it). */
const SCOPE_SCHEMA: StoreSchema = {
  name: "scope",
  lazy: false,
  migrations: [
    `CREATE TABLE scope_state (
     id INTEGER PRIMARY KEY CHECK (id = 1),
     volume_id TEXT NOT NULL,
     object_store_id TEXT NOT NULL,
     scope_key TEXT NOT NULL,
     epoch TEXT NOT NULL,
     generation TEXT NOT NULL,
     root TEXT NOT NULL,
     last_key_prefix TEXT NOT NULL,
     holder TEXT
   );
   CREATE TABLE publish_history (
     seq INTEGER PRIMARY KEY AUTOINCREMENT,
     generation TEXT NOT NULL,
     previous_generation TEXT NOT NULL,
     event TEXT NOT NULL
   );`,
    // 2: the version moves to `meta.schema_version`, where every store keeps it.
    `DROP TABLE IF EXISTS schema_version`,
    // 3: the listing index's outbox (durable/index-outbox.ts).
    OUTBOX_MIGRATION,
    // 4: the outbox remembers what its shard acknowledged (no re-send after a restart).
    OUTBOX_DELIVERED_MIGRATION,
    // 5: the outbox keeps the object's namespace (an instance started without a name delivers).
    OUTBOX_NAMESPACE_MIGRATION,
  ],
  // Version 1 was recorded in a table of its own.
  legacyVersion: (sql) =>
    hasTable(sql, "schema_version")
      ? sql.exec<{ version: number }>("SELECT version FROM schema_version WHERE id = 1").toArray()[0]?.version
      : undefined,
};

interface StateRow extends Record<string, SqlStorageValue> {
  volume_id: string;
  object_store_id: string;
  scope_key: string;
  epoch: string;
  generation: string;
  root: string;
  last_key_prefix: string;
  holder: string | null;
}

interface HistoryRow extends Record<string, SqlStorageValue> {
  generation: string;
  previous_generation: string;
  event: string;
}

type HolderJson = Omit<HeldLease, "epoch"> & { epoch: string };

export class ScopeStore extends MigratedStore {
  constructor(storage: DurableObjectStorage) {
    super(storage, SCOPE_SCHEMA);
  }

  /**
   * The scope's state (waiters empty), or a fresh one for a scope never touched. An object
   * addressed under a different identity than the one it stored is a bug: `internal`.
   */
  load(scope: ScopeId): ScopeState {
    const row = this.sql.exec<StateRow>("SELECT * FROM scope_state WHERE id = 1").toArray()[0];
    if (row === undefined) return emptyScopeState(scope);
    if (
      row.volume_id !== scope.volumeId ||
      row.object_store_id !== scope.objectStoreId ||
      row.scope_key !== scope.key
    ) {
      throw new ShiftlockError("internal", "scope object addressed under a different identity");
    }
    const holder = row.holder === null ? null : (JSON.parse(row.holder) as HolderJson);
    return {
      scope,
      epoch: BigInt(row.epoch),
      generation: BigInt(row.generation),
      root: JSON.parse(row.root) as unknown,
      lastKeyPrefix: row.last_key_prefix,
      holder: holder === null ? null : { ...holder, epoch: BigInt(holder.epoch) },
      waiters: [],
    };
  }

  /** The identity stored by the first save, or undefined for a scope never changed. */
  storedScope(): ScopeId | undefined {
    const row = this.sql
      .exec<StateRow>("SELECT volume_id, object_store_id, scope_key FROM scope_state WHERE id = 1")
      .toArray()[0];
    return row === undefined
      ? undefined
      : { volumeId: row.volume_id, objectStoreId: row.object_store_id, key: row.scope_key };
  }

  /**
   * Persist a step's durable changes (its publish, and through `stage` the index outbox row)
   * in one transaction. No-op if unchanged.
   * `previous` is the state the step was decided from.
   */
  save(previous: ScopeState, step: ScopeStep, stage?: (next: ScopeState) => void): void {
    if (!step.changed) return;
    const next = step.next;
    const holder: HolderJson | null =
      next.holder === null ? null : { ...next.holder, epoch: formatCounter(next.holder.epoch) };
    const grants = step.granted.length + (step.result.ok && step.result.kind === "granted" ? 1 : 0);
    const sql = this.sql;
    this.write(() => {
      // The row is born with epoch and generation 0; only the guarded updates below move them.
      sql.exec(
        `INSERT INTO scope_state
           (id, volume_id, object_store_id, scope_key, epoch, generation, root, last_key_prefix, holder)
         VALUES (1, ?, ?, ?, '0', '0', 'null', '', NULL) ON CONFLICT (id) DO NOTHING`,
        next.scope.volumeId,
        next.scope.objectStoreId,
        next.scope.key,
      );
      // All grants but the last step the epoch on their own; the last (or none) rides on the
      // state update below, guarded the same way: one row written for the common one grant.
      const lastFrom = this.advanceEpoch(previous.epoch, next.epoch, grants);
      const updated = sql
        .exec(
          `UPDATE scope_state SET epoch = ?, generation = ?, root = ?, last_key_prefix = ?, holder = ?
           WHERE id = 1 AND epoch = ? AND generation = ? RETURNING id`,
          formatCounter(next.epoch),
          formatCounter(next.generation),
          JSON.stringify(next.root ?? null),
          next.lastKeyPrefix,
          holder === null ? null : JSON.stringify(holder),
          formatCounter(lastFrom),
          formatCounter(previous.generation),
        )
        .toArray();
      if (updated.length !== 1) throw new ShiftlockError("internal", "scope changed underneath the decision");
      if (step.published !== undefined) this.appendHistory(step.published.event, step.published.previousGeneration);
      stage?.(next);
    });
  }

  /**
   * The fencing step: +1 per grant, each a guarded update of the stored epoch, except the
   * last, which the caller's state update makes. Returns the epoch that update moves from.
   */
  private advanceEpoch(from: bigint, to: bigint, grants: number): bigint {
    if (to !== from + BigInt(grants)) throw new ShiftlockError("internal", "lease epoch must advance by 1 per grant");
    const lastFrom = grants === 0 ? from : to - 1n;
    for (let epoch = from; epoch < lastFrom; epoch++) {
      const moved = this.sql
        .exec(
          "UPDATE scope_state SET epoch = ? WHERE id = 1 AND epoch = ? RETURNING epoch",
          formatCounter(epoch + 1n),
          formatCounter(epoch),
        )
        .toArray();
      if (moved.length !== 1) throw new ShiftlockError("internal", "lease epoch changed underneath the decision");
    }
    return lastFrom;
  }

  private appendHistory(event: CoordEvent, previousGeneration: bigint): void {
    const sql = this.sql;
    const { seq } = sql
      .exec<{ seq: number }>(
        "INSERT INTO publish_history (generation, previous_generation, event) VALUES (?, ?, ?) RETURNING seq",
        formatCounter(event.generation),
        formatCounter(previousGeneration),
        eventText(event),
      )
      .one();
    // `seq` is gapless (AUTOINCREMENT inside the save's transaction; only the oldest are deleted).
    const through = pruneThroughSeq(seq);
    if (through !== undefined) sql.exec("DELETE FROM publish_history WHERE seq <= ?", through);
  }

  /**
   * The wire messages a watch after `afterGeneration` must be sent before live events (the
   * shared rule of core/scope-replay.ts over the retained publish history).
   */
  replayMessages(state: ScopeState, afterGeneration: bigint | undefined): string[] {
    if (afterGeneration === undefined || afterGeneration >= state.generation) return [];
    const rows = this.sql
      .exec<HistoryRow>("SELECT generation, previous_generation, event FROM publish_history ORDER BY seq")
      .toArray();
    const retained = rows.map((r) => ({
      generation: BigInt(r.generation),
      previousGeneration: BigInt(r.previous_generation),
      message: r.event,
    }));
    const plan = planReplay(state, retained, afterGeneration);
    if (plan.kind === "none") return [];
    if (plan.kind === "summary") return [eventText(plan.event)];
    return retained.slice(plan.fromIndex).map((r) => r.message);
  }
}
