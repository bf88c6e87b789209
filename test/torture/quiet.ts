/**
 * Quiet points: the clients pass one gate before each step (workload.ts), and the fault
 * injector closes it when it wants the server to itself — before a lapse crash and for the
 * listing judge (faults.ts, listing-probe.ts).
 *
 * Guarantees:
 * - Once {@link Gate.close} resolves, no client has a step in flight (its calls, retries and
 *   back-offs all completed) and none starts one until {@link Gate.open}; it resolves with
 *   the instant the last step in flight completed (the quiet point), or the instant it was
 *   called when none was.
 * - Closing twice, or opening an open gate, is harmless.
 *
 * Does not: stop the watchers. They only read; their connects apply expiry, as any read of
 * a claim or scope does, and the listing judge reads the objects afresh every round.
 */
export class Gate {
  private busy = 0;
  private closed = false;
  private reopened: Promise<void> = Promise.resolve();
  private reopen: () => void = () => {};
  private idle: (() => void) | undefined;
  private lastLeftMs = 0;

  /** Wait until the gate is open, then count this client's step as in flight. */
  async enter(): Promise<void> {
    while (this.closed) await this.reopened;
    this.busy++;
  }

  /** The step that {@link enter} counted completed. */
  leave(): void {
    this.busy--;
    this.lastLeftMs = Date.now();
    if (this.busy === 0) this.idle?.();
  }

  /** Stop new steps; resolves with the quiet point once no step is in flight. */
  async close(): Promise<number> {
    if (!this.closed) {
      this.closed = true;
      this.reopened = new Promise((resolve) => (this.reopen = resolve));
    }
    if (this.busy === 0) return Date.now();
    await new Promise<void>((resolve) => (this.idle = resolve));
    this.idle = undefined;
    return this.lastLeftMs;
  }

  /** Let the clients go on. */
  open(): void {
    if (!this.closed) return;
    this.closed = false;
    this.reopen();
  }
}
