/**
 * A push → pull queue that turns watch callbacks into an async iterable.
 *
 * Guarantees: items come out in push order, none dropped; after `end()` the iteration
 * finishes once the buffered items are consumed; after `fail(err)` the buffered items are
 * delivered, then one `next()` rejects with `err` and later ones report done. Breaking out of a `for await` (or calling
 * `return()`) runs the `onClose` hook once, so the producer can release its socket or
 * subscription.
 *
 * Several pending `next()` calls are served in call order.
 *
 * Does not: bound its buffer (the producer decides what to do with a slow consumer).
 */
export class WatchQueue<T> implements AsyncIterable<T> {
  private readonly items: T[] = [];
  /** Pending `next()` calls, oldest first (only while the buffer is empty). */
  private readonly waiters: { resolve: (r: IteratorResult<T>) => void; reject: (e: unknown) => void }[] = [];
  private finished = false;
  private failure: { error: unknown } | undefined;
  private closed = false;
  private failureDelivered = false;

  private drainWaiters: (() => void)[] = [];

  /**
   * @param onClose runs once when the consumer stops (close, `return()`, `break`)
   * @param onTake runs after the consumer took an item (flow control: acknowledgements)
   */
  constructor(
    private readonly onClose: () => void = () => {},
    private readonly onTake: (item: T) => void = () => {},
  ) {}

  /** Resolves once every buffered item was taken (or the queue is done). */
  drained(): Promise<void> {
    if (this.items.length === 0 || this.done) return Promise.resolve();
    return new Promise((resolve) => this.drainWaiters.push(resolve));
  }

  private took(item: T): void {
    this.onTake(item);
    if (this.items.length === 0 && this.drainWaiters.length > 0) {
      const waiters = this.drainWaiters;
      this.drainWaiters = [];
      for (const w of waiters) w();
    }
  }

  /** True once ended, failed or closed: pushes are ignored from then on. */
  get done(): boolean {
    return this.finished || this.failure !== undefined;
  }

  /** Buffered, not yet consumed items. */
  get size(): number {
    return this.items.length;
  }

  push(item: T): void {
    if (this.done) return;
    const w = this.waiters.shift();
    if (w !== undefined) {
      w.resolve({ value: item, done: false });
      this.took(item);
    } else {
      this.items.push(item);
    }
  }

  /** Finish the iteration after the buffered items. */
  end(): void {
    if (this.done) return;
    this.finished = true;
    this.wake();
  }

  /** Finish the iteration with an error after the buffered items. */
  fail(error: unknown): void {
    if (this.done) return;
    this.failure = { error };
    this.wake();
  }

  /** End now and run the close hook (idempotent). */
  close(): void {
    this.items.length = 0;
    this.end();
    if (!this.closed) {
      this.closed = true;
      this.onClose();
    }
  }

  private wake(): void {
    const drains = this.drainWaiters;
    this.drainWaiters = [];
    for (const d of drains) d();
    if (this.items.length > 0) return;
    for (const w of this.waiters.splice(0)) {
      if (this.failure !== undefined && !this.failureDelivered) {
        this.failureDelivered = true;
        w.reject(this.failure.error);
      } else {
        w.resolve({ value: undefined, done: true });
      }
    }
  }

  next(): Promise<IteratorResult<T>> {
    if (this.items.length > 0) {
      const item = this.items.shift() as T;
      this.took(item);
      return Promise.resolve({ value: item, done: false });
    }
    if (this.failure !== undefined && !this.failureDelivered) {
      // Like an async generator: the error is thrown once, later calls report done.
      this.failureDelivered = true;
      // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- rethrows what the producer failed with (e.g. an AbortSignal reason)
      return Promise.reject(this.failure.error);
    }
    if (this.done) return Promise.resolve({ value: undefined, done: true });
    return new Promise((resolve, reject) => {
      this.waiters.push({ resolve, reject });
    });
  }

  [Symbol.asyncIterator](): AsyncIterator<T> {
    return {
      next: () => this.next(),
      return: () => {
        this.close();
        return Promise.resolve({ value: undefined, done: true });
      },
    };
  }
}
