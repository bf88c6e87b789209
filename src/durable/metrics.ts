/**
 * Counters to Workers Analytics Engine, when a `METRICS` dataset binding is configured
 * (optional; docs/operations.md shows the wrangler.toml lines).
 *
 * Guarantees: one data point per counted increment batch, `indexes: [namespace]`,
 * `blobs: [namespace, counter]`, `doubles: [n]`; writing never throws into the caller
 * (`writeDataPoint` is fire-and-forget by design) and costs nothing without the binding.
 *
 * Does not: aggregate (Analytics Engine does, at query time) or keep anything in memory.
 */

/** The optional binding: absent from `Env` unless a deployment configures it. */
export function metricsDataset(env: Env): AnalyticsEngineDataset | undefined {
  const binding = (env as { METRICS?: AnalyticsEngineDataset }).METRICS;
  return typeof binding?.writeDataPoint === "function" ? binding : undefined;
}

/** Record `n` increments of `counter` in `namespace`. */
export function writeCounter(env: Env, namespace: string, counter: string, n: number): void {
  const dataset = metricsDataset(env);
  if (dataset === undefined || n <= 0) return;
  try {
    dataset.writeDataPoint({ indexes: [namespace], blobs: [namespace, counter], doubles: [n] });
  } catch (err) {
    console.warn("metrics write failed", err);
  }
}
