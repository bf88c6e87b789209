// Tests of this Worker against the real shiftlock server, inside the Workers runtime
// (docs/testing.md in shiftlock): vitest-pool-workers runs this Worker from wrangler.toml,
// and `shiftlockWorker()` adds the packaged shiftlock Worker as an auxiliary worker named
// "shiftlock", which wrangler.toml's `[[services]]` binding `SHIFTLOCK` reaches. Its state
// is in memory; it accepts the local `dev-token`.
import { cloudflareTest } from "@cloudflare/vitest-pool-workers";
import { shiftlockWorker } from "shiftlock/testing";
import { defineConfig } from "vitest/config";

export default defineConfig({
  plugins: [
    cloudflareTest({
      wrangler: { configPath: "./wrangler.toml" },
      miniflare: {
        bindings: { SHIFTLOCK_TOKEN: "dev-token" },
        workers: [shiftlockWorker()],
      },
    }),
  ],
  // A test's first request starts both Workers in fresh isolates: seconds on a busy machine.
  test: { testTimeout: 30_000 },
});
