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
 */
export function percentile(sorted, p) {
  if (sorted.length === 0) return NaN;
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil((p / 100) * sorted.length)));
  return sorted[rank - 1];
}

/**
 * @param {number[]} samples milliseconds
 * @returns {{n: number, p50: number, p99: number, max: number}}
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

/** @param {number} x */
export function round(x, digits = 2) {
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}

/**
 * Run `clients` concurrent loops of `cycle` until `durationMs` passes or `maxCycles` cycles
 * finished in total. Each loop awaits its own cycle before starting the next (closed loop).
 *
 * @param {object} o
 * @param {number} o.clients concurrent loops
 * @param {number} o.durationMs wall-clock bound
 * @param {number} o.maxCycles count bound over all loops
 * @param {(client: number, i: number) => Promise<void>} o.cycle one unit of work
 * @returns {Promise<{cycles: number, seconds: number, perSecond: number, latency: ReturnType<typeof summarize>}>}
 */
export async function closedLoop({ clients, durationMs, maxCycles, cycle }) {
  const latencies = [];
  let started = 0;
  const t0 = performance.now();
  const deadline = t0 + durationMs;
  const loop = async (client) => {
    for (let i = 0; performance.now() < deadline && started < maxCycles; i++) {
      started++;
      const s = performance.now();
      await cycle(client, i);
      latencies.push(performance.now() - s);
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
