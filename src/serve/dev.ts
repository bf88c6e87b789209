/**
 * `npm run dev`: `wrangler dev` with live reload, for people changing shiftlock itself —
 * the same address, state directory and dev-only token as `npm start` (local-server.ts),
 * taken from the same constant. Extra arguments are passed on to `wrangler dev`.
 *
 * Not the fast path: the dev proxy costs several times a request's work and grows in memory
 * under sustained load (docs/BENCHMARKS.md); `npm start` serves through workerd directly.
 */
import { spawn } from "node:child_process";
import { DEV_AUTH_TOKENS } from "./local-server.ts";

const args = [
  "wrangler",
  "dev",
  "--ip",
  "127.0.0.1",
  "--port",
  "8787",
  "--persist-to",
  ".wrangler/state",
  "--var",
  `AUTH_TOKENS:${DEV_AUTH_TOKENS}`,
  ...process.argv.slice(2),
];
const child = spawn("npx", args, { stdio: "inherit" });
for (const signal of ["SIGINT", "SIGTERM"] as const) process.on(signal, () => child.kill(signal));
child.on("exit", (code, signal) => process.exit(code ?? (signal === null ? 1 : 0)));
