// One `vitest run` drives four projects:
// - unit:   Node; pure machines, codecs, the client and the in-memory backends.
// - worker: vitest-pool-workers (workerd); routes, Durable Objects, alarms, WebSockets.
// - fence-worker: vitest-pool-workers; shiftlock/fence on a test Worker's DO, D1 and R2.
// - e2e:    Node against the real server started the way README's `npm start` does.
import { cloudflareTest } from "@cloudflare/vitest-pool-workers";
import { defineConfig } from "vitest/config";
import { buildPages } from "./src/serve/build-pages.ts";

// The Worker bundles the pages (`#pages`, dist/pages/files.js), which must exist before the
// worker project bundles it: built here too, not only by `npm run build`.
await buildPages();

/** Tokens the worker tests authenticate with (never used outside tests). */
export const TEST_AUTH_TOKENS = JSON.stringify([
  { token: "test-write-all", role: "write", namespaces: "*" },
  { token: "test-read-all", role: "read", namespaces: "*" },
  { token: "test-write-alpha", role: "write", namespaces: ["alpha"] },
  { token: "test-admin-all", role: "admin", namespaces: "*", name: "test-admin" },
]);

/** Origins the worker tests' CORS configuration allows (a list, as a deployment would set it). */
export const TEST_CORS_ORIGINS = "https://app.example, https://ops.example";

/** FUZZ_RUNS, FUZZ_SEED and FUZZ_PATH reach the worker fuzz tests as bindings (docs/fuzzing.md). */
const FUZZ_BINDINGS = Object.fromEntries(
  ["FUZZ_RUNS", "FUZZ_SEED", "FUZZ_PATH"].map((key) => [key, process.env[key] ?? ""]),
);

export default defineConfig({
  test: {
    // The one structured log line per write or refusal (docs/operations.md) is asserted by
    // request-log.test.ts; printed for every request of every test it only buries the
    // report (the fuzz suites send thousands).
    onConsoleLog: (log) => !log.startsWith('{"namespace":'),
    projects: [
      {
        test: {
          name: "unit",
          include: ["test/unit/**/*.test.ts", "test/contract/memory-*.test.ts"],
          environment: "node",
        },
      },
      {
        plugins: [
          cloudflareTest({
            // The service's wrangler.toml and Worker, with its object classes replaced by
            // subclasses of the same names that expose a clock and limits to the tests.
            main: "./test/worker/test-entry.ts",
            wrangler: { configPath: "./wrangler.toml" },
            miniflare: {
              bindings: { AUTH_TOKENS: TEST_AUTH_TOKENS, CORS_ORIGINS: TEST_CORS_ORIGINS, ...FUZZ_BINDINGS },
            },
          }),
        ],
        // The first request of a file starts the Worker bundle in a fresh isolate (≈3 s on a
        // busy 2-core machine); the default 5 s left no headroom for that cold start.
        test: {
          name: "worker",
          include: ["test/worker/**/*.test.ts"],
          testTimeout: 15_000,
        },
      },
      {
        // The fence helpers against Miniflare's own Durable Objects, D1 and R2, through a
        // Worker of their own (test/fence-worker/wrangler.toml), not the service's.
        plugins: [cloudflareTest({ wrangler: { configPath: "./test/fence-worker/wrangler.toml" } })],
        test: {
          name: "fence-worker",
          include: ["test/fence-worker/**/*.test.ts"],
          testTimeout: 15_000,
        },
      },
      {
        test: {
          name: "e2e",
          include: ["test/e2e/**/*.test.ts", "test/contract/server-*.test.ts"],
          environment: "node",
          globalSetup: ["test/e2e/global-setup.ts"],
          testTimeout: 30_000,
          hookTimeout: 60_000,
        },
      },
    ],
  },
});
