/**
 * What the claims machine knows of generations' leases (docs/protocol.md#sessions): the view
 * a claim's decision is taken with, and which views a command needs before it is decided.
 *
 * Guarantees:
 * - A bound claim is held while its owner's epoch is live: it never expires by the clock
 *   alone (its `expiresAtMs` is the lease deadline it last learned, which may trail), only
 *   when a view or a delivery says that its epoch ended. A view whose epoch differs from
 *   the claim's means the claim's epoch ended (epochs only grow).
 * - {@link leasesWanted} names at most one generation to bind (the caller's lease, for a
 *   bound acquire or commit) and at most one to look at (a successor's, for a bound
 *   prepare; a bound owner's whose last known deadline passed, for a contending acquire).
 *   Nothing else asks a generation: a renew of a bound claim, a release, a read never do.
 *
 * Does not: ask anyone (the object or the in-memory backend fetches the views), or read a
 * clock (`nowMs` is a parameter).
 */
import type { ClaimRecord } from "../protocol/claims.ts";
import type { ClaimCommand } from "./claim-command.ts";

/** A generation's lease as its object answered it: the current epoch, its deadline, and whether it is live. */
export interface LeaseView {
  /** The generation's current (or last) epoch; 0 when it never held a lease. */
  epoch: bigint;
  /** The epoch's deadline (server clock); 0 when no lease is live. */
  expiresAtMs: number;
  /** The lease was live when its object answered. */
  live: boolean;
}

/** Views by generation id: what a decision may consult. */
export type LeaseViews = ReadonlyMap<string, LeaseView>;

/** No views at all (a decision that needs none). */
export const NO_LEASE_VIEWS: LeaseViews = new Map();

/** Which generations a command needs the lease of: `bind` registers the claim with its lease too. */
export interface LeasesWanted {
  bind?: string;
  peek?: string;
}

/**
 * True when a held, bound claim's epoch is known to have ended: the owner's view says another
 * epoch is current, or that the claim's epoch is no longer live.
 */
export function boundEpochEnded(record: ClaimRecord, views: LeaseViews): boolean {
  if (!record.bound || record.phase === "unowned") return false;
  const view = views.get(record.ownerGeneration);
  return view !== undefined && (view.epoch !== record.leaseEpoch || !view.live);
}

/**
 * The leases `command` needs on `current` at `nowMs` (see the module comment). A contending
 * acquire looks at a bound owner's lease only once the deadline the claim last learned has
 * passed: before that the owner is live, and asking would cost a request for nothing.
 */
export function leasesWanted(current: ClaimRecord | undefined, command: ClaimCommand, nowMs: number): LeasesWanted {
  switch (command.kind) {
    case "acquire": {
      const wanted: LeasesWanted = command.bound === true ? { bind: command.generationId } : {};
      const held = current !== undefined && current.phase !== "unowned";
      if (held && current.bound && current.ownerGeneration !== command.generationId && nowMs > current.expiresAtMs) {
        wanted.peek = current.ownerGeneration;
      }
      return wanted;
    }
    case "prepare":
      return command.bound === true && command.toGeneration !== "" ? { peek: command.toGeneration } : {};
    case "commit":
      return command.bound === true ? { bind: command.toGeneration } : {};
    default:
      return {};
  }
}
