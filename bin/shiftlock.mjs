#!/usr/bin/env node
/**
 * The `shiftlock` command (docs/cli.md). In a clone (src/ is there) it runs
 * src/cli/main.ts directly: Node 20 cannot strip types by itself, so the TypeScript
 * sources are transpiled on load by `tsx` (a devDependency). In the installed package (no
 * src/) it runs the JavaScript `tsc` built into lib/ (docs/package.md): no TypeScript
 * and no tsx needed.
 *
 * Guarantees: the exit status is `main`'s (docs/cli.md: 0 ok, 1 refused, 2 usage,
 * 3 unreachable, 5 the service failed); the
 * first SIGINT/SIGTERM aborts the command (a watch ends, a held lease is released) and a
 * second one exits 130 at once — except while a `run` command listens (`onSignal`): then
 * every signal is its to forward, and it decides when the process ends. Does not
 * type-check the sources it runs.
 */
import { existsSync } from "node:fs";

const fromSources = existsSync(new URL("../src/cli/main.ts", import.meta.url));
if (fromSources) (await import("tsx/esm/api")).register();

// lib/ exists only after `npm run build:lib` (npm pack runs it): a specifier tsc does not resolve.
const built = "../lib/cli/main.js";
/** @type {typeof import("../src/cli/main.ts")} */
const { main } = fromSources ? await import("../src/cli/main.ts") : await import(built);
const interrupt = new AbortController();
let interrupted = false;
/** @type {Set<(signal: "SIGINT" | "SIGTERM") => void>} */
const listeners = new Set();
for (const sig of /** @type {const} */ (["SIGINT", "SIGTERM"])) {
  process.on(sig, () => {
    if (listeners.size > 0) {
      for (const listener of listeners) listener(sig);
      return;
    }
    if (interrupted) process.exit(130);
    interrupted = true;
    interrupt.abort(new Error(`interrupted (${sig})`));
  });
}
process.exitCode = await main(process.argv.slice(2), {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
  env: process.env,
  signal: interrupt.signal,
  onSignal: (listener) => {
    listeners.add(listener);
    return () => listeners.delete(listener);
  },
});
