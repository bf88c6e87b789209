/**
 * The torture test, short: `npm run torture` for about 60 s against its own
 * server (as `npm start` runs it), with at least three crashes. Seed 6's fault schedule at a
 * 3 s mean interval begins crash, crash, pause, crash (the seed fixes the schedule, not the
 * interleaving), so three crashes fall inside the minute even when a restart takes 20 s.
 * Every checker must find nothing.
 */
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";

/** `npm run torture`'s command without its build step (`npm test` has built already). */
function tortureCommand(): string {
  const pkg = JSON.parse(readFileSync("package.json", "utf8")) as { scripts: Record<string, string> };
  const run = pkg.scripts["torture"]?.split(" && ").at(-1);
  if (run === undefined) throw new Error("package.json has no torture script");
  return run;
}

describe("torture (short)", () => {
  it("runs 60 s with crashes and pauses and finds no violation", { timeout: 600_000 }, async () => {
    const args = "--duration-s 60 --clients 8 --seed 6 --fault-every-s 3 --crash-share 0.75";
    const child = spawn(`${tortureCommand()} ${args}`, {
      shell: true,
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, WRANGLER_SEND_METRICS: "false", NO_COLOR: "1" },
    });
    let output = "";
    child.stdout.on("data", (d: Buffer) => (output += d.toString()));
    child.stderr.on("data", (d: Buffer) => (output += d.toString()));
    const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
    const last = output.trim().split("\n").at(-1) ?? "";
    const figures = /^ops (\d+), crashes (\d+), pauses (\d+), ambiguous (\d+), unchecked (\d+), violations (\d+)$/.exec(
      last,
    );
    expect(figures, output).not.toBeNull();
    const [, ops, crashes, , , , violations] = figures!.map(Number);
    expect(violations, output).toBe(0);
    expect(code, output).toBe(0);
    expect(crashes).toBeGreaterThanOrEqual(3);
    expect(ops).toBeGreaterThan(100);
  });
});
