/**
 * ClaimHandle: one named claim of a generation session, as the service sees it — acquire
 * it, wait for it, adopt it after a handoff, release it.
 *
 * Guarantees (the work is done by the session's internal `SessionClaim`, session-claim.ts):
 * - At most one live {@link Lease} per handle; concurrent `tryAcquire`/`waitForOwnership`
 *   callers share one backend call and receive the same lease.
 * - No orphan ownership: an acquire that succeeds after every caller gave up (signal
 *   aborted) or after the session closed is released again at once.
 * - Bound (the default): the claim is held under the session's lease, kept by one
 *   keepalive loop for every claim of the session; the lease is lost with the session's
 *   epoch. Unbound (`bound: false`): it is renewed every `renewIntervalMs`; a refused renew
 *   ends it as lost at once, a transient failure is retried until `deadlineMs -
 *   safetyMarginMs`. Either way a loss is signalled before the server can let anyone else
 *   acquire.
 * - A voluntary release stops renewal first: it never reports a loss.
 *
 * Does not: expose the runtime's controls (ending, reserving or committing a lease are the
 * session's and the handoff's business), or release claims when the process dies (the
 * server's TTL does that).
 */
import type { ClaimRecord } from "../../protocol/claims.ts";
import type { ClaimAcquireOptions, SessionClaim, ClaimWaitOptions } from "./session-claim.ts";
import type { Lease } from "./lease.ts";

export class ClaimHandle {
  readonly #claim: SessionClaim;

  /** Handles are made by `GenerationSession.claim(name)`. */
  constructor(claim: SessionClaim) {
    this.#claim = claim;
  }

  /** The claim's name. */
  get name(): string {
    return this.#claim.name;
  }

  /** The live lease, if this generation holds the claim. */
  get lease(): Lease | undefined {
    return this.#claim.lease;
  }

  /**
   * One acquire attempt. Resolves with the lease, or rejects with `claim_held` when another
   * generation owns or reserves the claim.
   */
  tryAcquire(opts: ClaimAcquireOptions = {}): Promise<Lease> {
    return this.#claim.tryAcquire(opts);
  }

  /**
   * Acquire, retrying when its watch says the claim may have become acquirable (and every
   * `watchedAcquireIntervalMs`, or `acquireIntervalMs` without a live watch) while another
   * generation holds the claim or the service is unreachable. After a handoff commits the
   * claim to this generation, this adopts it with the committed token.
   */
  waitForOwnership(opts: ClaimWaitOptions = {}): Promise<Lease> {
    return this.#claim.waitForOwnership(opts);
  }

  /**
   * Install a lease for a claim a handoff committed to this generation, without a round
   * trip. A bound record (`record.bound`) is held under the session's lease: its epoch must
   * be the session's live one (else `no_lease`). Unbound, `deadlineMs` is the local-clock
   * time until which the server keeps the claim (the handoff result carries it), and the
   * first renew, within a second, confirms ownership.
   */
  adopt(record: ClaimRecord, deadlineMs: number): Lease {
    return this.#claim.adopt(record, deadlineMs);
  }

  /** Release the current lease, if any (see {@link Lease.release}). */
  release(): Promise<void> {
    return this.#claim.release();
  }
}
