/* eslint-disable @typescript-eslint/no-unsafe-assignment, @typescript-eslint/no-unsafe-member-access, @typescript-eslint/no-unsafe-argument --
   wrangler's worker options reach workers-types the type-aware linter cannot resolve (tsc
   resolves them), as in local-server.ts. Floating-promise rules still apply here. */
/**
 * `npm run build:lib` (and so `npm pack`) step that puts the deployable Worker into the
 * package: `lib/worker/index.js` is exactly what `wrangler deploy --dry-run` bundles, and
 * `lib/worker/worker.json` is what Miniflare needs to run it as a deployment would
 * (compatibility date and flags, the vars and the SQLite-backed Durable Object classes of
 * wrangler.toml, read by wrangler's own reader) plus the local tokens of `npm start`.
 * `shiftlock/testing` (src/testing/) starts it from there.
 *
 * Guarantees: the bundle is built fresh from the sources (never a stale `dist/`); wrangler's
 * output is shown only when it fails; the source map and wrangler's README are left out
 * of the package (the bundle alone is ≈1 MB).
 * Does not: build `lib/client` (tsc does, before this runs).
 */
import { execFile } from "node:child_process";
import { rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import type { PackagedWorker } from "../testing/packaged-worker.ts";
import { DEV_AUTH_TOKENS, readWranglerConfig } from "./local-server.ts";

const outDir = resolve(process.argv[2] ?? "lib/worker");
const wranglerBin = resolve("node_modules", ".bin", "wrangler");

await new Promise<void>((done, fail) => {
  const env = { ...process.env, WRANGLER_SEND_METRICS: "false", NO_COLOR: "1" };
  execFile(wranglerBin, ["deploy", "--dry-run", "--outdir", outDir], { env }, (err, stdout, stderr) => {
    if (err === null) done();
    else fail(new Error(`wrangler deploy --dry-run failed:\n${stdout}\n${stderr}`));
  });
});
for (const extra of ["index.js.map", "README.md"]) rmSync(join(outDir, extra), { force: true });

const { name, workerOptions } = readWranglerConfig("wrangler.toml");
const durableObjects: PackagedWorker["durableObjects"] = {};
/** A binding's target as wrangler's reader gives it: a class name, or a class with options. */
type DurableObjectTarget = string | { className: string; useSQLite?: boolean };
for (const [binding, target] of Object.entries<DurableObjectTarget>(workerOptions.durableObjects ?? {})) {
  if (typeof target === "string") throw new Error(`durable object ${binding}: expected a class, not ${target}`);
  durableObjects[binding] = { className: target.className, useSQLite: target.useSQLite === true };
}
const worker: PackagedWorker = {
  name,
  compatibilityDate: workerOptions.compatibilityDate ?? "",
  compatibilityFlags: [...(workerOptions.compatibilityFlags ?? [])],
  bindings: Object.fromEntries(
    Object.entries(workerOptions.bindings ?? {}).filter(
      (entry): entry is [string, string] => typeof entry[1] === "string",
    ),
  ),
  durableObjects,
  localBindings: { AUTH_TOKENS: DEV_AUTH_TOKENS, CORS_ORIGINS: "*" },
};
writeFileSync(join(outDir, "worker.json"), `${JSON.stringify(worker, null, 2)}\n`);
