/**
 * The generations of the in-memory backend: their records and leases, decided by the server's
 * generation machine (core/generation-machine.ts, core/generation-lease.ts) — the in-process
 * twin of the generation objects.
 *
 * Guarantees:
 * - Every decision is the server's: registration, state moves, keepalives, `lease/end` and
 *   lazy expiry, applied to the stored record at the injected clock.
 * - The end of an epoch (its deadline on the injected clock, `lease/end`, a final state) is
 *   handed to `onLeaseEnded` at once, as the object's delivery would be, for the backend to
 *   tell its bound claims.
 * - {@link MemoryGenerations.view} answers what the generation object answers a claim.
 *
 * Does not: persist anything or keep promise ttls (an in-memory lease never restarts), or
 * apply a deployment's notice grace (`LEASE_NOTICE_TTLS`, core/generation-lease.ts): its
 * timer ends a lease at the deadline, as the generation object does by default.
 */
import type { Clock } from "../../core/clock.ts";
import type { LeaseView } from "../../core/claim-leases.ts";
import { leaseLive } from "../../core/generation-lease.ts";
import { decideTouch, type GenerationDecision } from "../../core/generation-machine.ts";
import type { LeaseEnd } from "../../core/generation-lease.ts";
import type { GenerationRecord } from "../../protocol/generations.ts";
import { MemoryAlarms } from "../memory-alarms.ts";

export class MemoryGenerations {
  private readonly records = new Map<string, GenerationRecord>();
  private readonly alarms: MemoryAlarms;

  constructor(
    private readonly clock: Clock,
    /** Told of every epoch that ended, after the record was stored. */
    private readonly onLeaseEnded: (generationId: string, ended: LeaseEnd) => void,
  ) {
    this.alarms = new MemoryAlarms(clock);
  }

  /** The stored record of `id` (no expiry applied: decide with it). */
  get(id: string): GenerationRecord | undefined {
    return this.records.get(id);
  }

  /** Every stored record. */
  all(): GenerationRecord[] {
    return [...this.records.values()];
  }

  /** Keep what a decision decided, tell an epoch's end, and re-arm the lease's timer. */
  settle(decision: GenerationDecision): void {
    const record = decision.record;
    if (record === undefined) return;
    if (decision.ok ? decision.changed : decision.leaseEnded !== undefined) this.records.set(record.id, record);
    if (decision.leaseEnded !== undefined) this.onLeaseEnded(record.id, decision.leaseEnded);
    this.arm(record);
  }

  /** The lease of `id` as its object would answer a claim (lazy expiry applied). */
  view(id: string): LeaseView {
    this.settle(decideTouch(this.records.get(id), this.clock.nowMs()));
    const record = this.records.get(id);
    if (record === undefined) return { epoch: 0n, expiresAtMs: 0, live: false };
    const live = leaseLive(record, this.clock.nowMs());
    return { epoch: record.leaseEpoch, expiresAtMs: live ? record.leaseExpiresAtMs : 0, live };
  }

  /** Stop every timer (backend closed). */
  close(): void {
    this.alarms.close();
  }

  /** (Re-)arm the lease timer of a generation at its deadline on the injected clock. */
  private arm(record: GenerationRecord): void {
    const atMs = record.leaseExpiresAtMs === 0 ? undefined : record.leaseExpiresAtMs + 1;
    this.alarms.arm(record.id, atMs, () => this.settle(decideTouch(this.records.get(record.id), this.clock.nowMs())));
  }
}
