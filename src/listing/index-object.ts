/**
 * The namespace index (docs/protocol.md#listing): one Durable Object per namespace, named
 * `objectName(ns, "index")`, holding a copy of every claim, generation and scope record the
 * namespace's objects delivered, and the namespace's counters (docs/listing.md).
 *
 * Guarantees:
 * - Fed only by the objects' outboxes ({@link NamespaceIndex.apply}), after their own
 *   commits: an object never waits for the index. Entries apply by sequence number, so
 *   replays and reorderings are harmless.
 * - Pages come from the store in UTF-8 byte order of the key, `limit + 1` rows read at most.
 * - Reconciliation: while the index holds entries, its alarm fires every
 *   {@link RECONCILE_INTERVAL_MS} and asks the next {@link RECONCILE_BATCH} objects (round
 *   robin over claims, generations and scopes) to deliver anything they committed but did
 *   not deliver (a crash between commit and delivery). The alarm only moves earlier.
 *
 * Does not: know about objects that never delivered anything (an object whose first commit
 * was lost to a crash appears when it next wakes: its next request, its alarm or start-up).
 */
import { objectName } from "../durable/object-names.ts";
import { ShiftlockObject } from "../durable/object-base.ts";
import { CLAIM_PHASES } from "../protocol/claims.ts";
import { COUNTER_NAMES, type CounterWindow, type Stats } from "../protocol/listing.ts";
import { SCOPE_KEY_SEPARATOR } from "../core/listing-cursor.ts";
import type { IndexDelivery, IndexEntry, IndexKind } from "./delivery.ts";
import { IndexStore, type PageQuery } from "./index-store.ts";

/** Time between reconciliation passes. */
export const RECONCILE_INTERVAL_MS = 30_000;
/** Objects asked per pass. */
export const RECONCILE_BATCH = 64;

const KINDS: readonly IndexKind[] = ["claim", "generation", "scope"];

/** One page as the index answers it: records as their stored wire JSON, the last key, more or not. */
export interface IndexPage {
  /** Flat wire records (claims, generations and scope summaries have no nested fields). */
  records: Record<string, string | number | boolean>[];
  lastKey: string | undefined;
  more: boolean;
}

export class NamespaceIndex extends ShiftlockObject {
  private readonly store: IndexStore;
  /** Reconciliation's position: the kind and the key it continues after (this instance only). */
  private reconcileAt: { kind: number; after: string } = { kind: 0, after: "" };

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.store = new IndexStore(ctx.storage);
    this.startUp(() => this.store.open());
  }

  /** One object's delivery: its newer entry, its counters. Arms reconciliation. */
  async apply(delivery: IndexDelivery): Promise<void> {
    const nowMs = this.clock.nowMs();
    this.store.apply(delivery.entry, delivery.counters, nowMs);
    await this.alarms.ensure(nowMs + RECONCILE_INTERVAL_MS);
  }

  /** Seed entries directly (tests and tools that rebuild an index). */
  seed(entries: readonly IndexEntry[]): void {
    this.store.applyMany(entries.map((value) => ({ seq: 1, value })));
  }

  /** A page of `q.kind` (see {@link IndexStore.page}). */
  page(q: PageQuery): IndexPage {
    const { keys, records, more } = this.store.page(q);
    return { records: records.map((r) => JSON.parse(r) as IndexPage["records"][number]), lastKey: keys.at(-1), more };
  }

  /** The counters of the last minute and hour, and what the index holds. */
  stats(): Stats {
    const nowMs = this.clock.nowMs();
    const tallies = this.store.tallies();
    const claimsByPhase = Object.fromEntries(
      CLAIM_PHASES.map((p) => [p, tallies.claimsByPhase[p] ?? 0]),
    ) as Stats["claimsByPhase"];
    return {
      lastMinute: toWindow(this.store.counterSums(nowMs - 60_000)),
      lastHour: toWindow(this.store.counterSums(nowMs - 3_600_000)),
      claimsByPhase,
      generations: tallies.generations,
      scopes: tallies.scopes,
    };
  }

  /** Reconciliation pass (see the module doc). Idempotent; re-arms while entries exist. */
  override async alarm(): Promise<void> {
    this.alarms.fired();
    const targets = this.nextTargets();
    await Promise.all(targets.map((t) => this.reconcile(t.kind, t.key)));
    if (targets.length > 0) {
      await this.alarms.ensure(this.clock.nowMs() + RECONCILE_INTERVAL_MS);
    }
  }

  private nextTargets(): { kind: IndexKind; key: string }[] {
    const targets: { kind: IndexKind; key: string }[] = [];
    for (let turns = 0; turns <= KINDS.length && targets.length < RECONCILE_BATCH; turns++) {
      const kind = KINDS[this.reconcileAt.kind]!;
      const keys = this.store.keysAfter(kind, this.reconcileAt.after, RECONCILE_BATCH - targets.length);
      for (const key of keys) targets.push({ kind, key });
      if (keys.length > 0 && targets.length >= RECONCILE_BATCH) {
        this.reconcileAt.after = keys.at(-1)!;
      } else {
        this.reconcileAt = { kind: (this.reconcileAt.kind + 1) % KINDS.length, after: "" };
      }
    }
    return targets;
  }

  /** Ask one object to deliver what it has not; a failure waits for the next pass. */
  private async reconcile(kind: IndexKind, key: string): Promise<void> {
    const ns = this.namespace();
    try {
      if (kind === "claim") await this.env.CLAIMS.getByName(objectName(ns, "claim", key)).flushIndex();
      else if (kind === "generation")
        await this.env.GENERATIONS.getByName(objectName(ns, "generation", key)).flushIndex();
      else await this.env.SCOPES.getByName(objectName(ns, "scope", ...key.split(SCOPE_KEY_SEPARATOR))).flushIndex();
    } catch (err) {
      console.warn("index reconciliation failed for one object", err);
    }
  }

  private namespace(): string {
    const parsed = JSON.parse(this.ctx.id.name ?? "[]") as unknown[];
    return typeof parsed[0] === "string" ? parsed[0] : "";
  }
}

function toWindow(sums: Record<string, number>): CounterWindow {
  const window = {
    ...Object.fromEntries(COUNTER_NAMES.map((name) => [name, sums[name] ?? 0])),
    conflicts: {},
  } as CounterWindow;
  for (const [name, n] of Object.entries(sums)) {
    if (name.startsWith("conflict:")) window.conflicts[name.slice("conflict:".length)] = n;
  }
  return window;
}
