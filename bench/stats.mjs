/**
 * Small statistics and load loops for the benchmark.
 *
 * Guarantees: every loop is bounded by both a wall-clock duration and a maximum count, so a
 * phase always stops by itself. Percentiles are nearest-rank over all samples (no sampling).
 */

/**
 * Nearest-rank percentile.
 * @param {number[]} sorted ascending samples
 * @param {number} p 0..100
 * @returns {number} NaN when there are no samples
 */
export function percentile(sorted, p) {
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil((p / 100) * sorted.length)));
  return sorted[rank - 1] ?? NaN;
}

/** @typedef {{n: number, p50: number, p99: number, max: number}} Summary milliseconds */

/**
 * @param {number[]} samples milliseconds
 * @returns {Summary}
 */
export function summarize(samples) {
  const sorted = [...samples].sort((a, b) => a - b);
  return {
    n: sorted.length,
    p50: round(percentile(sorted, 50)),
    p99: round(percentile(sorted, 99)),
    max: round(sorted.at(-1) ?? NaN),
  };
}

/**
 * @param {number} x
 * @param {number} [digits] after the decimal point
 */
export function round(x, digits = 2) {
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}

/**
 * @typedef {object} LoopResult
 * @property {number} cycles finished cycles
 * @property {number} seconds wall-clock time of the loop
 * @property {number} perSecond cycles per second
 * @property {Summary} latency of one cycle
 */

/**
 * Run `clients` concurrent loops of `cycle` until `durationMs` passes or `maxCycles` cycles
 * finished in total. Each loop awaits its own cycle before starting the next (closed loop).
 *
 * @param {object} o
 * @param {number} o.clients concurrent loops
 * @param {number} o.durationMs wall-clock bound
 * @param {number} o.maxCycles count bound over all loops
 * @param {(client: number, i: number, deadline: number) => Promise<void | boolean>} o.cycle one
 *   unit of work; `deadline` is the loop's end (`performance.now()` time) for a cycle that
 *   may spin (a lock retried at once when busy): one that gives up at the deadline returns
 *   `false` and is not counted
 * @returns {Promise<LoopResult>}
 */
export async function closedLoop({ clients, durationMs, maxCycles, cycle }) {
  /** @type {number[]} */
  const latencies = [];
  let started = 0;
  const t0 = performance.now();
  const deadline = t0 + durationMs;
  /** @param {number} client */
  const loop = async (client) => {
    for (let i = 0; performance.now() < deadline && started < maxCycles; i++) {
      started++;
      const s = performance.now();
      const done = await cycle(client, i, deadline);
      if (done !== false) latencies.push(performance.now() - s);
    }
  };
  await Promise.all(Array.from({ length: clients }, (_, c) => loop(c)));
  const seconds = (performance.now() - t0) / 1000;
  return {
    cycles: latencies.length,
    seconds: round(seconds),
    perSecond: round(latencies.length / seconds, 1),
    latency: summarize(latencies),
  };
}
