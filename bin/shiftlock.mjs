#!/usr/bin/env node
/**
 * The `shiftlock` command (docs/cli.md). Runs src/cli/main.ts directly: Node 20 cannot
 * strip types by itself, so the TypeScript sources are transpiled on load
 * (src/cli/ts-hooks.mjs).
 *
 * Guarantees: the exit status is `main`'s (0 ok, 1 refused, 2 usage, 3 unreachable); the
 * first SIGINT/SIGTERM aborts the command (a watch ends, a held lease is released) and a
 * second one exits 130 at once. Does not type-check the sources it runs.
 */
import { register } from "node:module";

register("../src/cli/ts-hooks.mjs", import.meta.url);

const { main } = await import("../src/cli/main.ts");
const interrupt = new AbortController();
let interrupted = false;
for (const sig of ["SIGINT", "SIGTERM"]) {
  process.on(sig, () => {
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
});
