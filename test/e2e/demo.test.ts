// `npm run demo` against the test server: it hands N fenced claims from generation A to B
// and ends with one JSON line. Checked here: the line's shape and that its counts agree
// with the run (every claim moved, one stale write per claim refused) — not timing, which
// belongs to the figures in docs/handoff.md.
import { spawn } from "node:child_process";
import { expect, inject, it } from "vitest";

/** Run the demo to completion: exit code and stdout. */
function runDemo(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", "demo/run.ts", ...args], {
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, NO_COLOR: "1" },
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    child.once("error", reject);
    child.once("close", (code) => resolve({ code, stdout, stderr }));
  });
}

it.each([1, 3])("npm run demo -- --claims %i ends with a coherent JSON summary", async (claims) => {
  const { code, stdout, stderr } = await runDemo(["--claims", String(claims), "--url", inject("serverUrl")]);
  expect(code, stderr).toBe(0);
  const last = stdout.trimEnd().split("\n").at(-1)!;
  const summary = JSON.parse(last) as Record<string, unknown>;
  expect(Object.keys(summary)).toEqual(["claims", "rttMs", "gapMs", "staleWritesRejected"]);
  expect(summary["claims"]).toBe(claims);
  // The demo's zombie of A writes once per claim with its old token: each is refused, and
  // A has no other refused write (it stops writing when the drain begins).
  expect(summary["staleWritesRejected"]).toBe(claims);
  for (const key of ["rttMs", "gapMs"]) {
    expect(typeof summary[key], key).toBe("number");
    expect(summary[key] as number, key).toBeGreaterThan(0);
  }
  expect(stdout).toContain(`${claims}/${claims} stale writes from A's old tokens rejected`);
});
