/**
 * The watch handed out by `MemoryCoordinator`: events are pushed synchronously by the
 * coordinator's step, in the order the machine produced them.
 *
 * Guarantees: nothing is dropped (unbounded buffer); `afterGeneration` is the highest
 * generation delivered (the resume point); `close()` unregisters it from its scope.
 *
 * Does not: reconnect (there is no connection to lose).
 */
import type { CoordEvent, CoordWatch } from "./coord-types.ts";
import { WatchQueue } from "../transport/watch-queue.ts";

/** A watch fed synchronously by the coordinator. */
export class MemoryWatch implements CoordWatch {
  private readonly queue: WatchQueue<CoordEvent>;
  private last: bigint;

  constructor(afterGeneration: bigint, onClose: () => void) {
    this.last = afterGeneration;
    this.queue = new WatchQueue<CoordEvent>(onClose);
  }

  get afterGeneration(): bigint {
    return this.last;
  }

  deliver(event: CoordEvent): void {
    if (event.generation > this.last) this.last = event.generation;
    this.queue.push(event);
  }

  fail(reason: unknown): void {
    this.queue.fail(reason);
    this.queue.close();
  }

  close(): void {
    this.queue.close();
  }

  [Symbol.asyncIterator](): AsyncIterator<CoordEvent> {
    return this.queue[Symbol.asyncIterator]();
  }
}
