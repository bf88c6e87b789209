/**
 * A seeded pseudo-random generator (mulberry32): the same seed gives the same sequence, so a
 * run's choices (operations, arguments, fault schedule) reproduce from its seed.
 *
 * Does not: make a run's interleaving reproducible (that depends on real timing).
 */
export class Rng {
  private state: number;

  constructor(seed: number) {
    this.state = seed >>> 0;
  }

  /** Uniform in [0, 1). */
  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  }

  /** Integer in [lo, hi]. */
  int(lo: number, hi: number): number {
    return lo + Math.floor(this.next() * (hi - lo + 1));
  }

  chance(p: number): boolean {
    return this.next() < p;
  }

  pick<T>(items: readonly T[]): T {
    const item = items[Math.floor(this.next() * items.length)];
    if (item === undefined) throw new Error("pick from an empty list");
    return item;
  }

  /** An independent generator derived from this one (one per client, one for faults). */
  fork(): Rng {
    return new Rng(Math.floor(this.next() * 4_294_967_296));
  }
}
