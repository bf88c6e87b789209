/**
 * The claims machine's commands, derived from the claim routes' bodies, and the one mapping
 * from a decoded request to a command that the claim object and the in-memory backend share.
 *
 * Guarantees: a mutation's command carries every field of its route's body except
 * `operationId` (which the object's replay, not the machine, handles), so a field added to a
 * body schema reaches the machine without another edit (test/unit/claim-command.test.ts
 * checks it at the type level).
 * Does not: validate (the route's schema did) or decide anything (claim-machine.ts does).
 */
import type { ClaimBodies, ClaimMutationName, evictClaim } from "../protocol/claim-routes.ts";
import type { RouteBody } from "../protocol/route.ts";

/** A mutation's command: `kind` is the op name, the rest is its body without `operationId`. */
export type MutationCommand<K extends ClaimMutationName = ClaimMutationName> = {
  [P in K]: { kind: P } & Omit<ClaimBodies[P], "operationId">;
}[K];

/** An operator ends the hold (docs/protocol.md#eviction): the evict route's body; `note` travels with the event. */
export type EvictCommand = { kind: "evict" } & RouteBody<typeof evictClaim>;

/**
 * The owner generation's lease epoch ended (docs/protocol.md#sessions): the generation's
 * delivery, after the commit that ended it. Expires a claim bound to that epoch (or an
 * earlier one) of that generation; anything else is unchanged.
 */
export type LeaseEndedCommand = { kind: "lease_ended"; generationId: string; epoch: bigint };

export type ClaimCommand = { kind: "get" } | { kind: "expire" } | MutationCommand | EvictCommand | LeaseEndedCommand;

/** The machine's command for a decoded mutation. */
export function commandOf<K extends ClaimMutationName>(op: K, body: ClaimBodies[K]): MutationCommand<K> {
  const { operationId: _replayedElsewhere, ...fields } = body;
  return { kind: op, ...fields };
}
