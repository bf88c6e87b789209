/**
 * The shiftlock Worker as the package carries it (`lib/worker/`, built by `npm pack`, see
 * docs/testing.md), described as Miniflare worker options: for `startShiftlock()` and for
 * the `miniflare.workers` of a vitest-pool-workers config, where shiftlock runs as an
 * auxiliary worker next to the user's own.
 *
 * Guarantees: the options run the exact bundle `wrangler deploy` uploads, with wrangler.toml's
 * compatibility date and flags, vars and SQLite-backed Durable Object classes (recorded in
 * `worker.json` at build time), the given `AUTH_TOKENS` or else the local tokens of
 * `npm start`, and no persistence option: state lives in memory, fresh for every Miniflare
 * instance.
 * Does not: import Miniflare (the options are plain data) or work from a clone before
 * `npm run build:lib` (the sources have no `worker/` folder next to them).
 */
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/** `worker.json`: what src/serve/package-worker.ts records next to the bundle. */
export interface PackagedWorker {
  /** The Worker's name in wrangler.toml. */
  name: string;
  compatibilityDate: string;
  compatibilityFlags: string[];
  /** wrangler.toml's `[vars]`. */
  bindings: Record<string, string>;
  durableObjects: Record<string, { className: string; useSQLite: boolean }>;
  /** What `npm start` adds: the local `AUTH_TOKENS` and `CORS_ORIGINS`. */
  localBindings: { AUTH_TOKENS: string; CORS_ORIGINS: string };
}

/** One entry of `AUTH_TOKENS` (docs/auth.md). */
export interface AuthTokenConfig {
  token: string;
  role: "read" | "write" | "admin";
  namespaces: "*" | readonly string[];
  /** Shown in log lines instead of anything derived from the secret. */
  name?: string;
}

/** Options of {@link shiftlockWorker} and `startShiftlock()`. */
export interface ShiftlockWorkerOptions {
  /**
   * The tokens the server accepts: a list, or its JSON text. Default: the local tokens of
   * `npm start` (`dev-token`, write, and `dev-admin-token`, admin, every namespace).
   */
  authTokens?: string | readonly AuthTokenConfig[];
  /** Vars to add or replace (`CORS_ORIGINS`, `MAX_WATCHERS_PER_OBJECT`, …). */
  bindings?: Readonly<Record<string, string>>;
  /** The Worker's name, which a service binding names (default `"shiftlock"`). */
  name?: string;
}

/**
 * Miniflare options of one worker (a structural subset of Miniflare's `WorkerOptions`; a
 * type alias, not an interface, so it also fits option schemas typed as string-keyed records).
 */
export type ShiftlockMiniflareWorker = {
  name: string;
  modules: true;
  scriptPath: string;
  modulesRoot: string;
  compatibilityDate: string;
  compatibilityFlags: string[];
  bindings: Record<string, string>;
  durableObjects: Record<string, { className: string; useSQLite: boolean }>;
};

/** Where the packaged bundle lives: `lib/worker/` next to this module's `lib/testing/`. */
const WORKER_DIR = join(dirname(fileURLToPath(import.meta.url)), "..", "worker");

/** Read `worker.json`, or say how to get it. */
function readPackagedWorker(): PackagedWorker {
  try {
    return JSON.parse(readFileSync(join(WORKER_DIR, "worker.json"), "utf8")) as PackagedWorker;
  } catch (err) {
    throw new Error(
      `shiftlock/testing: no packaged Worker in ${WORKER_DIR} (a clone builds it with \`npm run build:lib\`)`,
      { cause: err },
    );
  }
}

/**
 * Miniflare options that run the packaged shiftlock Worker with in-memory state.
 *
 * @example
 * // vitest.config.ts of a Worker with `[[services]] binding = "SHIFTLOCK", service = "shiftlock"`
 * cloudflareTest({ wrangler: { configPath: "./wrangler.toml" }, miniflare: { workers: [shiftlockWorker()] } })
 */
export function shiftlockWorker(options: ShiftlockWorkerOptions = {}): ShiftlockMiniflareWorker {
  const worker = readPackagedWorker();
  const authTokens =
    options.authTokens === undefined
      ? worker.localBindings.AUTH_TOKENS
      : typeof options.authTokens === "string"
        ? options.authTokens
        : JSON.stringify(options.authTokens);
  return {
    name: options.name ?? worker.name,
    modules: true,
    scriptPath: join(WORKER_DIR, "index.js"),
    modulesRoot: WORKER_DIR,
    compatibilityDate: worker.compatibilityDate,
    compatibilityFlags: [...worker.compatibilityFlags],
    bindings: {
      ...worker.bindings,
      CORS_ORIGINS: worker.localBindings.CORS_ORIGINS,
      AUTH_TOKENS: authTokens,
      ...options.bindings,
    },
    durableObjects: { ...worker.durableObjects },
  };
}
