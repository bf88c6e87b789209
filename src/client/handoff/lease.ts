/**
 * Lease: a live local grant of one claim to this generation, with the fencing token to
 * attach to every protected write.
 *
 * Guarantees:
 * - Every public field is read-only: `token` never changes during a lease's life (a new
 *   ownership epoch is a new Lease), and `deadlineMs`/`reserved` only move as the runtime
 *   learns from the server. What the runtime may do to a lease (end it, move its deadline,
 *   mark it reserved) is a {@link LeaseControl} handed to the lease's creator alone.
 * - `signal` aborts exactly once, when the lease ends for any reason: lost, released,
 *   transferred to a successor, or session closed. `signal.reason` is a `ShiftlockError`
 *   with code `lease_lost` and `details.reason` naming which; for a loss its `cause` is
 *   what proved it. A bound lease (the default, docs/protocol.md#sessions) is lost with the
 *   session's lease epoch: no keepalive confirmed before `deadlineMs - safetyMarginMs`, or
 *   the server ended the epoch, refused a keepalive or named another epoch. An unbound one
 *   is lost on a refused renew, or no successful renew before `deadlineMs - safetyMarginMs`.
 * - The loss signal fires before the server-side deadline as long as the local clock does
 *   not run slower than the server's by more than the safety margin over one TTL (the rule
 *   is src/client/lease-timing.ts). A bound lease's `deadlineMs` is its epoch's: every
 *   lease of the epoch moves with each keepalive of the session.
 *
 * Does not: stop your code. Check `signal` (or `held`) before each protected step, and write
 * under `fence` (shiftlock/fence) so the resource refuses writes from an older owner.
 */
import { formatCounter } from "../../protocol/counter.ts";
import { ShiftlockError } from "../../protocol/errors.ts";
import { type FenceCredential, claimFenceKey, fenceCredential } from "../fence/fence-key.ts";
import type { LeaseDeadline } from "../lease-timing.ts";
import type { LeaseEndReason } from "./events.ts";

/** What the runtime can do to a lease; never reachable from the lease itself. */
export interface LeaseControl {
  /** The local bound until which the server keeps the claim (renewals, or the session's keepalives, move it). */
  readonly deadline: LeaseDeadline;
  /** End the lease once; false when it had already ended. */
  end(reason: LeaseEndReason, cause?: unknown): boolean;
  /** A transfer reservation was prepared (true) or aborted (false). */
  setReserved(reserved: boolean): void;
}

export interface LeaseInit {
  /** The backend's namespace (for the fence key). */
  namespace: string;
  claimName: string;
  generationId: string;
  token: bigint;
  deadline: LeaseDeadline;
  /** What `release()` does (the claim handle releases on the server). */
  release: () => Promise<void>;
}

export class Lease implements AsyncDisposable {
  readonly claimName: string;
  readonly generationId: string;
  /** Fencing token of this ownership epoch. */
  readonly token: bigint;
  /**
   * The fence to write under (shiftlock/fence): key `{ns}/claims/{name}` (parts
   * percent-encoded), this lease's `token`, and the `Shiftlock-Fence` header value.
   */
  readonly fence: FenceCredential;
  readonly #controller = new AbortController();
  readonly #deadline: LeaseDeadline;
  readonly #release: () => Promise<void>;
  #ended: LeaseEndReason | undefined;
  #reserved = false;

  /** Leases are made by a claim handle; `bind` hands the control of this one to its maker. */
  constructor(init: LeaseInit, bind: (control: LeaseControl) => void) {
    this.claimName = init.claimName;
    this.generationId = init.generationId;
    this.token = init.token;
    this.fence = fenceCredential(claimFenceKey(init.namespace, init.claimName), init.token);
    this.#deadline = init.deadline;
    this.#release = init.release;
    bind({
      deadline: init.deadline,
      end: (reason, cause) => this.#end(reason, cause),
      setReserved: (reserved) => {
        this.#reserved = reserved;
      },
    });
  }

  /** Local conservative deadline (local clock, epoch ms): the server keeps the claim at least until then. */
  get deadlineMs(): number {
    return this.#deadline.deadlineMs;
  }

  /** True while a transfer reservation is prepared on this claim. */
  get reserved(): boolean {
    return this.#reserved;
  }

  /** Aborts when the lease ends; see the module doc for reasons. */
  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  /** True until the lease ends. */
  get held(): boolean {
    return this.#ended === undefined;
  }

  /** Why the lease ended, or undefined while held. */
  get endReason(): LeaseEndReason | undefined {
    return this.#ended;
  }

  /** Throw the end reason if the lease has ended (call before a protected write). */
  throwIfEnded(): void {
    this.#controller.signal.throwIfAborted();
  }

  /**
   * Release the claim on the server (idempotent; retried safely with one operation id).
   * Renewal stops first, so a voluntary release never reports a loss.
   */
  release(): Promise<void> {
    return this.#release();
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.release();
  }

  #end(reason: LeaseEndReason, cause?: unknown): boolean {
    if (this.#ended !== undefined) return false;
    this.#ended = reason;
    const message =
      reason === "lost"
        ? `lease on claim ${JSON.stringify(this.claimName)} lost${cause instanceof Error ? `: ${cause.message}` : ""}`
        : `lease on claim ${JSON.stringify(this.claimName)} ended: ${reason}`;
    this.#controller.abort(
      new ShiftlockError(
        "lease_lost",
        message,
        { claim: this.claimName, token: formatCounter(this.token), reason },
        cause === undefined ? undefined : { cause },
      ),
    );
    return true;
  }
}
