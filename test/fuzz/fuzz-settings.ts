// How many cases the fuzz tests run and from which seed, from FUZZ_RUNS and FUZZ_SEED
// (docs/fuzzing.md). The default seed is fixed, so a plain run is deterministic: CI checks
// the same cases every time, and a failure reproduces by re-running. A run with another seed
// explores new cases; fast-check reports the seed (and the shrink path) of a failure, and
// FUZZ_SEED (with FUZZ_PATH) replays exactly that case.

/** The seed of a run without FUZZ_SEED. */
export const DEFAULT_FUZZ_SEED = 20_261_102;

export interface FuzzSettings {
  /** Cases (or command sequences) in all, before a test divides them between its parts. */
  runs: number;
  seed: number;
  /** fast-check's replay path of a reported counterexample (FUZZ_PATH), if any. */
  path: string | undefined;
}

function integer(name: string, text: string | undefined, fallback: number): number {
  if (text === undefined || text.trim() === "") return fallback;
  const value = Number(text);
  if (!Number.isSafeInteger(value)) throw new Error(`${name} must be an integer, got ${JSON.stringify(text)}`);
  return value;
}

/**
 * Read the settings from `source` (process.env in Node; the Worker's env in the worker pool,
 * where vitest.config.ts passes them as bindings). `defaultRuns` is the CI-sized run count.
 */
export function fuzzSettings(source: Readonly<Record<string, unknown>>, defaultRuns: number): FuzzSettings {
  const text = (key: string): string | undefined => {
    const value = source[key];
    return typeof value === "string" ? value : undefined;
  };
  const runs = integer("FUZZ_RUNS", text("FUZZ_RUNS"), defaultRuns);
  if (runs < 1) throw new Error("FUZZ_RUNS must be at least 1");
  const path = text("FUZZ_PATH");
  return {
    runs,
    seed: integer("FUZZ_SEED", text("FUZZ_SEED"), DEFAULT_FUZZ_SEED),
    path: path === undefined || path === "" ? undefined : path,
  };
}

/** fast-check parameters for `numRuns` cases of `settings` (seed and replay path included). */
export function fastCheckParameters(
  settings: FuzzSettings,
  numRuns: number,
): { numRuns: number; seed: number; path?: string; endOnFailure: boolean } {
  return {
    numRuns,
    seed: settings.seed,
    ...(settings.path === undefined ? {} : { path: settings.path }),
    endOnFailure: false,
  };
}
