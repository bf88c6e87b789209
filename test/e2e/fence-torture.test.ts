/**
 * The fence torture, short: `npm run torture:fence` for 60 s (owners paused, crashed and
 * taken over while they write through the Durable Object, D1, R2, SQLite, Postgres and
 * memory fences). The checker must find nothing, and every kind of fault must have
 * happened. How many writes fit in the minute depends on the machine (docs/fencing.md has
 * a measured long run); this asserts only that the run did real work.
 */
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";

/** `npm run torture:fence`'s command. */
function tortureCommand(): string {
  const pkg = JSON.parse(readFileSync("package.json", "utf8")) as { scripts: Record<string, string> };
  const run = pkg.scripts["torture:fence"];
  if (run === undefined) throw new Error("package.json has no torture:fence script");
  return run;
}

describe("fence torture (short)", () => {
  it(
    "runs 60 s with pauses, crashes, takeovers and evictions and finds no violation",
    { timeout: 300_000 },
    async () => {
      const child = spawn(`${tortureCommand()} --duration-s 60 --seed 11`, {
        shell: true,
        stdio: ["ignore", "pipe", "pipe"],
        env: { ...process.env, NO_COLOR: "1" },
      });
      // Both streams, for the failure message; the summary is stdout's last line (stdout
      // alone: the two pipes' chunks arrive in no defined order relative to each other).
      let output = "";
      let stdout = "";
      child.stdout.on("data", (d: Buffer) => {
        output += d.toString();
        stdout += d.toString();
      });
      child.stderr.on("data", (d: Buffer) => (output += d.toString()));
      const code = await new Promise<number | null>((resolve) => child.once("close", resolve));
      const last = stdout.trim().split("\n").at(-1) ?? "";
      const figures =
        /^writes (\d+), refused (\d+), unknown (\d+), pauses (\d+), crashes (\d+), takeovers (\d+), evictions (\d+), violations (\d+)$/.exec(
          last,
        );
      expect(figures, output).not.toBeNull();
      const [, writes, refused, , pauses, crashes, takeovers, evictions, violations] = figures!.map(Number);
      expect(violations, output).toBe(0);
      expect(code, output).toBe(0);
      expect(writes).toBeGreaterThan(1_000);
      expect(refused).toBeGreaterThan(0);
      expect(pauses).toBeGreaterThan(0);
      expect(crashes).toBeGreaterThan(0);
      expect(takeovers).toBeGreaterThan(0);
      expect(evictions).toBeGreaterThan(0);
    },
  );
});
