/**
 * FencingValidator: the resource side of fencing — accept a write iff its token is not
 * zero and not below the highest token seen, and raise the high-water mark to it.
 *
 * Guarantees: the high-water mark never decreases; once a newer owner's token has been
 * seen, every write carrying an older token is rejected (the Go `TokenValidator`).
 *
 * Does not: persist the mark. A real resource stores it next to the data it protects and
 * checks it in the same transaction as the write.
 */
export class FencingValidator {
  private highest = 0n;

  /** Highest token accepted so far (0 before any). */
  get current(): bigint {
    return this.highest;
  }

  /** True (and the mark raised) when `token` may write. */
  accept(token: bigint): boolean {
    if (token === 0n || token < this.highest) return false;
    this.highest = token;
    return true;
  }
}
