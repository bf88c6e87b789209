/**
 * A call the in-memory backends answer in process: synchronous inside, a promise outside,
 * as the HTTP client's calls are.
 *
 * Guarantees: an already-aborted `signal` rejects before the body runs; whatever the body
 * throws becomes the rejection (never a synchronous throw to the caller).
 */
export async function inProcess<T>(signal: AbortSignal | undefined, body: () => T): Promise<T> {
  signal?.throwIfAborted();
  return Promise.resolve(body());
}
