/**
 * `npm run torture:fence -- [--duration-s 60] [--owners 4] [--seed N]`
 *
 * Runs the fence torture (runner.ts): owners paused, crashed and taken over while they write
 * through every fence (Durable Object, D1, R2, SQLite, Postgres, memory), then the fence
 * checker (check/fences.ts). Prints, last,
 * `writes N, refused R, unknown U, pauses P, crashes C, takeovers T, evictions E, violations V`, with the
 * first violations before it. Exit status 1 when V > 0, 2 for bad arguments.
 */
import { parseArgs } from "node:util";
import { checkFences } from "../check/fences.ts";
import { runFenceTorture } from "./runner.ts";

function usage(message: string): never {
  console.error(`torture:fence: ${message}`);
  console.error("usage: torture:fence [--duration-s 60] [--owners 4] [--seed N]");
  process.exit(2);
}

let values: Record<string, string | undefined>;
try {
  ({ values } = parseArgs({
    options: {
      "duration-s": { type: "string", default: "60" },
      owners: { type: "string", default: "4" },
      seed: { type: "string" },
    },
    strict: true,
    allowPositionals: false,
  }));
} catch (err) {
  usage(err instanceof Error ? err.message : String(err));
}

function number(name: string, min: number, max: number): number {
  const value = Number(values[name]);
  if (!Number.isInteger(value) || value < min || value > max) usage(`--${name} must be an integer in ${min}..${max}`);
  return value;
}

const log = (line: string): void => {
  process.stdout.write(`${new Date().toISOString()} ${line}\n`);
};

const seed = values["seed"] === undefined ? Math.floor(Math.random() * 2 ** 31) : number("seed", 0, 2 ** 32 - 1);
log(`seed ${seed}`);
const interrupt = new AbortController();
process.once("SIGINT", () => interrupt.abort());
process.once("SIGTERM", () => interrupt.abort());
const result = await runFenceTorture({
  durationS: number("duration-s", 1, 24 * 3600),
  owners: number("owners", 1, 256),
  seed,
  signal: interrupt.signal,
  log,
});
const violations = checkFences(result.writes);
for (const v of violations.slice(0, 20)) log(`violation: ${v.message}`);
const count = (outcome: string): number => result.writes.filter((w) => w.outcome === outcome).length;
const perResource = new Map<string, { n: number; ms: number }>();
for (const w of result.writes) {
  const r = perResource.get(w.resource) ?? { n: 0, ms: 0 };
  perResource.set(w.resource, { n: r.n + 1, ms: r.ms + (w.answeredMs - w.sentMs) });
}
log(
  `writes per fence (count, mean latency): ${[...perResource].map(([r, { n, ms }]) => `${r} ${n} ${(ms / n).toFixed(1)} ms`).join(", ")}`,
);
console.log(
  `writes ${result.writes.length}, refused ${count("refused")}, unknown ${count("unknown")}, pauses ${result.pauses}, crashes ${result.crashes}, takeovers ${result.takeovers}, evictions ${result.evictions}, violations ${violations.length}`,
);
process.exit(violations.length > 0 ? 1 : 0);
