// The `shiftlock` command as a process (bin/shiftlock.mjs) against the real server:
// configuration from the environment, JSON output, and exit statuses.
import { execFile } from "node:child_process";
import { describe, expect, inject, it } from "vitest";

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function shiftlock(args: string[], env: Record<string, string> = {}): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ["bin/shiftlock.mjs", ...args],
      {
        env: {
          ...process.env,
          SHIFTLOCK_URL: inject("serverUrl"),
          SHIFTLOCK_TOKEN: "dev-token",
          SHIFTLOCK_NAMESPACE: `e2e-cli-${process.pid}`,
          ...env,
        },
        timeout: 50_000,
      },
      (err, stdout, stderr) => {
        const code = err === null ? 0 : typeof err.code === "number" ? err.code : -1;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

// Each run starts a Node process (and, on a cold cache, transpiles the sources): generous timeouts.
describe("shiftlock (process)", { timeout: 120_000 }, () => {
  it("acquires and reads a claim with settings from the environment", async () => {
    const claim = `cli-${crypto.randomUUID()}`;
    const acquired = await shiftlock(["claims", "acquire", claim, "--generation", "g1", "--json"]);
    expect(acquired.code).toBe(0);
    expect(JSON.parse(acquired.stdout)).toMatchObject({ claim: { name: claim, fencingToken: "1", phase: "owned" } });
    const got = await shiftlock(["claims", "get", claim]);
    expect(got.code).toBe(0);
    expect(got.stdout).toMatch(/claim\.ownerGeneration\s+g1/);
  });

  it("claims list pages through the namespace index (listed within the 2 s lag bound)", async () => {
    const namespace = `e2e-cli-list-${crypto.randomUUID()}`;
    const env = { SHIFTLOCK_NAMESPACE: namespace };
    for (const claim of ["b", "a", "c"]) {
      expect((await shiftlock(["claims", "acquire", claim, "--generation", "g1"], env)).code).toBe(0);
    }
    const deadline = Date.now() + 2_000;
    let listed: Run;
    // Polls the lag guarantee itself; each process start takes longer than the bound anyway.
    do {
      listed = await shiftlock(["claims", "list", "--limit", "2", "--json"], env);
      expect(listed.code).toBe(0);
    } while (listed.stdout.trim().split("\n").length < 3 && Date.now() < deadline);
    const names = listed.stdout
      .trim()
      .split("\n")
      .map((line) => (JSON.parse(line) as { claim: { name: string } }).claim.name);
    expect(names).toEqual(["a", "b", "c"]);
  });

  it("exits 1 with the code named for a refusal, 2 for usage, 3 when the server is unreachable", async () => {
    const claim = `cli-${crypto.randomUUID()}`;
    await shiftlock(["claims", "acquire", claim, "--generation", "g1"]);
    const stale = await shiftlock(["claims", "release", claim, "--generation", "g1", "--fencing-token", "5"]);
    expect(stale.code).toBe(1);
    expect(stale.stderr).toContain("stale_token");
    const unauthorized = await shiftlock(["claims", "get", claim], { SHIFTLOCK_TOKEN: "wrong" });
    expect(unauthorized.code).toBe(1);
    expect(unauthorized.stderr).toContain("unauthorized");
    expect((await shiftlock(["claims", "frobnicate"])).code).toBe(2);
    const typo = await shiftlock(["claims", "get", claim, "--jsno"]);
    expect(typo.code).toBe(2);
    expect(typo.stderr).toContain("unknown option --jsno");
    const down = await shiftlock(["claims", "get", claim, "--url", "http://127.0.0.1:9"]);
    expect(down.code).toBe(3);
    expect(down.stderr).toContain("could not be reached");
  });
});
