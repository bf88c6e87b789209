/**
 * Requests held open while they wait for a write lease (docs/protocol.md#coord).
 *
 * Guarantees:
 * - Each queued acquire has exactly one pending promise, keyed by its waiter id; it settles
 *   exactly once — with the grant, with `lease_held` when `waitMs` passes, or with
 *   `lease_held` when the caller cancels — and is then forgotten.
 * - Settling an unknown (already settled or never registered) waiter is a harmless no-op,
 *   so a late alarm, a cancel and a grant can race without double answers.
 *
 * Does not: decide who is next (the machine's FIFO queue does) or outlive the object
 * instance: after a restart there are no pending requests, and the queue starts empty.
 */
import type { WireResponse } from "../protocol/wire-response.ts";

export class PendingWaiters {
  private readonly pending = new Map<string, (response: WireResponse) => void>();

  /** Register a waiter and get the promise its request awaits. */
  wait(waiterId: string): Promise<WireResponse> {
    return new Promise<WireResponse>((resolve) => {
      this.pending.set(waiterId, resolve);
    });
  }

  /** Answer a waiter. Returns false when it was not (or no longer) pending. */
  settle(waiterId: string, response: WireResponse): boolean {
    const resolve = this.pending.get(waiterId);
    if (resolve === undefined) return false;
    this.pending.delete(waiterId);
    resolve(response);
    return true;
  }

  has(waiterId: string): boolean {
    return this.pending.has(waiterId);
  }
}
