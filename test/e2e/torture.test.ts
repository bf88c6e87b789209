/**
 * The torture test, short: `npm run torture` for about 60 s against its own
 * server (as `npm start` runs it), with at least three crashes. Seed 6's fault schedule at a
 * 3 s mean interval begins crash, crash, pause, crash (the seed fixes the schedule, not the
 * interleaving), so three crashes fall inside the minute even when a restart takes 20 s.
 * Every checker must find nothing, and the listing must match the objects at every quiet
 * point (the lapse crashes' and the end's). The sessions are on (three session clients
 * keeping leases and holding bound claims, session crashes among the crashes): the run
 * must have kept leases and held bound claims.
 *
 * Then the same harness with a planted fault (`--plant listing-off`: every restart serves with
 * the listing switched off, so it hears of nothing after the first crash): the listing judge
 * must report mismatches and the run must fail, while every other checker still passes.
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

const SUMMARY =
  /^ops (\d+), crashes (\d+), pauses (\d+), ambiguous (\d+), unchecked (\d+), violations (\d+), listing mismatches (\d+)$/;

/** Run the torture command with `args`; its exit code, output and summary figures. */
async function torture(args: string): Promise<{ code: number | null; output: string; figures: number[] | undefined }> {
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
  return { code, output, figures: SUMMARY.exec(last)?.slice(1).map(Number) };
}

describe("torture (short)", () => {
  it(
    "runs 60 s with crashes and pauses and finds no violation and no listing mismatch",
    { timeout: 600_000 },
    async () => {
      const { code, output, figures } = await torture(
        "--duration-s 60 --clients 8 --seed 6 --fault-every-s 3 --crash-share 0.75",
      );
      expect(figures, output).toBeDefined();
      const [ops, crashes, , , , violations, mismatches] = figures!;
      expect(violations, output).toBe(0);
      expect(mismatches, output).toBe(0);
      expect(code, output).toBe(0);
      expect(crashes).toBeGreaterThanOrEqual(3);
      expect(ops).toBeGreaterThan(100);
      // The listing was judged after at least one lapse crash and at the end.
      expect(output).toMatch(/listing lapse \d+ \((lapsed|edge)\): 0 mismatches/);
      expect(output).toMatch(/listing end: 0 mismatches/);
      // Sessions kept leases and held bound claims, which the checkers judged like the others.
      const sessions = /sessions: (\d+) keepalives, (\d+) lease channels .* \((\d+) succeeded\)/.exec(output);
      expect(sessions, output).not.toBeNull();
      const [keepalives, channels, boundSucceeded] = sessions!.slice(1).map(Number);
      expect(keepalives! + channels!).toBeGreaterThan(0);
      expect(boundSucceeded).toBeGreaterThan(0);
    },
  );

  it("fails a run whose restarts drop every listing delivery (planted)", { timeout: 600_000 }, async () => {
    const { code, output, figures } = await torture(
      "--duration-s 20 --clients 8 --seed 6 --fault-every-s 3 --crash-share 1 --lapse-share 0 --plant listing-off",
    );
    expect(figures, output).toBeDefined();
    const [, crashes, , , , violations, mismatches] = figures!;
    expect(crashes, output).toBeGreaterThanOrEqual(1);
    expect(violations, output).toBe(0);
    expect(mismatches, output).toBeGreaterThan(0);
    expect(code, output).toBe(1);
  });
});
