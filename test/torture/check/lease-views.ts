/**
 * The generations' leases a claim's decision may have seen (docs/protocol.md#sessions), for
 * the linearizability check's claim steps (claim-step.ts): the server decides a bound
 * acquire, prepare or commit, and a contending acquire past a bound owner's learned
 * deadline, with the lease views of the generations `leasesWanted` names
 * (src/core/claim-leases.ts), and ends a bound hold when its generation delivers the end of
 * its epoch. No history records those views or deliveries; this module names every view
 * the history allows, so the machine can be asked with each.
 *
 * Guarantees (what is allowed, from lease-epochs.ts's bounds):
 * - The owner of a bound hold (epoch E) is seen live in E, or — only after the instant E was
 *   live through — ended; when it binds again it may also be seen in another, later epoch.
 * - Another generation is seen live in some epoch (the one a success answered, else a
 *   *wildcard*: a negative epoch, one nobody answered, which a success's record matches in
 *   any epoch), or not live unless it certainly held a live lease throughout the window.
 * - The end of a bound hold's epoch may be delivered only after the instant E was live through.
 * - A wildcard bind's learned deadline is not known: it lies from the window's start to
 *   {@link DEADLINE_REACH_TTLS} of the generation's longest ttl past its end, and both ends
 *   are tried.
 *
 * Does not: bound when a live view may have been answered (a view is taken before the
 * decision and may be stale: the server allows it).
 */
import type { ClaimCommand } from "../../../src/core/claim-command.ts";
import { type LeaseView, type LeaseViews, NO_LEASE_VIEWS, leasesWanted } from "../../../src/core/claim-leases.ts";
import { decideClaim } from "../../../src/core/claim-machine.ts";
import type { ClaimRecord } from "../../../src/protocol/claims.ts";
import type { LeaseEpochs } from "./lease-epochs.ts";

/** The views of a decision that asks no generation. */
const ONLY_NO_VIEWS: readonly LeaseViews[] = [NO_LEASE_VIEWS];

/**
 * A live lease's deadline lies at most this many of its longest ttls past the instant it was
 * seen: every deadline the generation serves is an instant it had already reached + a ttl — a
 * keepalive's answer, a channel ping's time, or a fresh instance's first read after a restart
 * (the restart rule, docs/generations.md "The lease after a restart") — so none is more than a ttl ahead.
 */
export const DEADLINE_REACH_TTLS = 1;

/** The epoch a lease view names when no answer says which (negative: matches any). */
export const WILDCARD_EPOCH = -1n;

/** True when `record` is held under a lease epoch. */
export const isBoundHold = (record: ClaimRecord | undefined): record is ClaimRecord & { bound: true } =>
  record !== undefined && record.bound && record.phase !== "unowned";

/** The window one decision is placed in, and what its success answered. */
export interface Placement {
  command: ClaimCommand;
  answer: ClaimRecord | undefined;
  fromMs: number;
  toMs: number;
}

/**
 * The records the claim may have had when deciding at `t`: `record` itself, and, for a bound
 * hold whose epoch may have ended by then, the record after the end was delivered.
 */
export function recordsAt(
  name: string,
  record: ClaimRecord | undefined,
  t: number,
  epochs: LeaseEpochs,
): (ClaimRecord | undefined)[] {
  if (!isBoundHold(record)) return [record];
  if (t <= epochs.bounds(record.ownerGeneration, record.leaseEpoch).liveThroughMs) return [record];
  return [record, delivered(name, record, t)];
}

/** `record` after its generation delivered the end of its epoch at `t`. */
export function delivered(name: string, record: ClaimRecord, t: number): ClaimRecord | undefined {
  const command = { kind: "lease_ended" as const, generationId: record.ownerGeneration, epoch: record.leaseEpoch };
  return decideClaim(name, record, command, t).next;
}

/** Every assignment of views the decision of `p` on `record` at `t` may have had. */
export function viewChoices(
  record: ClaimRecord | undefined,
  p: Placement,
  t: number,
  epochs: LeaseEpochs,
): readonly LeaseViews[] {
  const wanted = leasesWanted(record, p.command, t);
  if (wanted.bind === undefined && wanted.peek === undefined) return ONLY_NO_VIEWS;
  const asked = [...new Set([wanted.bind, wanted.peek])].filter((g): g is string => g !== undefined);
  let choices: Map<string, LeaseView>[] = [new Map()];
  for (const g of asked) {
    const views = viewsOf(g, g === wanted.bind, record, p, t, epochs);
    choices = choices.flatMap((c) => views.map((v) => new Map(c).set(g, v)));
  }
  return choices;
}

function viewsOf(
  g: string,
  binding: boolean,
  record: ClaimRecord | undefined,
  p: Placement,
  t: number,
  epochs: LeaseEpochs,
): LeaseView[] {
  const out: LeaseView[] = [];
  const owner = isBoundHold(record) && record.ownerGeneration === g ? record : undefined;
  if (owner !== undefined) out.push({ epoch: owner.leaseEpoch, expiresAtMs: owner.expiresAtMs, live: true });
  const answer = p.answer;
  if (binding && answer !== undefined && answer.bound && answer.ownerGeneration === g) {
    if (owner === undefined || answer.leaseEpoch !== owner.leaseEpoch) {
      out.push({ epoch: answer.leaseEpoch, expiresAtMs: answer.expiresAtMs, live: true });
    }
  } else if (binding || owner === undefined) {
    // Live in an epoch no answer names (another than the hold's own).
    const wildcard = owner !== undefined && owner.leaseEpoch < 0n ? owner.leaseEpoch - 1n : WILDCARD_EPOCH;
    const reachMs = p.toMs + DEADLINE_REACH_TTLS * epochs.maxTtlMs(g);
    for (const expiresAtMs of binding ? [p.fromMs, reachMs] : [t])
      out.push({ epoch: wildcard, expiresAtMs, live: true });
  }
  const ended =
    owner !== undefined ? t > epochs.bounds(g, owner.leaseEpoch).liveThroughMs : !epochs.liveThroughout(g, p.fromMs, t);
  if (ended) out.push({ epoch: owner?.leaseEpoch ?? 0n, expiresAtMs: 0, live: false });
  return out;
}
