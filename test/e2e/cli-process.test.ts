// The `shiftlock` command as a process (bin/shiftlock.mjs) against the real server:
// configuration from the environment, JSON output, and exit statuses.
import { execFile, spawn } from "node:child_process";
import { createServer } from "node:net";
import { describe, expect, inject, it } from "vitest";

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** The connection settings of every run: the test server, its write token, this file's namespace. */
function cliEnv(): Record<string, string> {
  return {
    SHIFTLOCK_URL: inject("serverUrl"),
    SHIFTLOCK_TOKEN: "dev-token",
    SHIFTLOCK_NAMESPACE: `e2e-cli-${process.pid}`,
  };
}

function shiftlock(args: string[], env: Record<string, string> = {}): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ["bin/shiftlock.mjs", ...args],
      {
        env: { ...process.env, ...cliEnv(), ...env },
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

  it("exits 1 with the code named for a refusal, 2 for usage (a URL without a scheme too), 3 naming the URL when the server is unreachable (code `unreachable` with --json)", async () => {
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
    const typoHint = await shiftlock(["claims", "acquire", claim, "--generation", "g1", "--ttl-msx", "5000"]);
    expect(typoHint.stderr).toContain("unknown option --ttl-msx (did you mean --ttl-ms?)");
    const url = `http://127.0.0.1:${await closedPort()}`;
    const down = await shiftlock(["claims", "get", claim, "--url", url]);
    expect(down.code).toBe(3);
    expect(down.stderr).toContain(`cannot reach ${url} (connect ECONNREFUSED`);
    const downJson = await shiftlock(["claims", "get", claim, "--url", url, "--json"]);
    expect(downJson.code).toBe(3);
    expect(JSON.parse(downJson.stderr)).toMatchObject({ error: { code: "unreachable", url } });
    const noScheme = await shiftlock(["claims", "get", claim, "--url", url.replace("http://", "")]);
    expect(noScheme.code).toBe(2);
    expect(noScheme.stderr).toContain(`--url must be an http:// or https:// URL`);
    const missing = await shiftlock(["claims", "get", `never-${crypto.randomUUID()}`]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain(`no such claim in namespace "${cliEnv()["SHIFTLOCK_NAMESPACE"]}"`);
  });

  it("a busy write lease names its holder (from the server's answer)", async () => {
    const scope = ["--volume", `vol-${crypto.randomUUID()}`, "--store", "main"];
    // `coord run` starts its command only once it holds the lease: the command's first line says so.
    const holder = spawn(
      process.execPath,
      [
        "bin/shiftlock.mjs",
        "coord",
        "run",
        ...scope,
        "--participant",
        "indexer-1",
        "--ttl",
        "1m",
        "--",
        process.execPath,
        "-e",
        HOLD,
      ],
      { env: { ...process.env, ...cliEnv() }, stdio: ["ignore", "pipe", "pipe"] },
    );
    const exited = new Promise<number | null>((resolve) => holder.on("exit", (code) => resolve(code)));
    try {
      await new Promise<void>((resolve, reject) => {
        holder.stdout.on("data", (chunk: Buffer) => {
          if (chunk.toString().includes("holding")) resolve();
        });
        holder.on("exit", () => reject(new Error("coord run ended before its command ran")));
      });
      const busy = await shiftlock(["coord", "lease", ...scope, "--participant", "indexer-2"]);
      expect(busy.code).toBe(1);
      expect(busy.stderr).toContain("lease_held");
      expect(busy.stderr).toContain("held by participant indexer-1");
    } finally {
      holder.kill("SIGTERM"); // forwarded to the command; the lease is released once it exited
    }
    expect(await exited).toBe(0);
  });
});

/** The command `coord run` holds the lease for: says so, then waits; exits 0 on SIGTERM. */
const HOLD = `console.log("holding"); process.on("SIGTERM", () => process.exit(0)); setInterval(() => {}, 1000);`;

/** A loopback port nothing listens on (bound, then closed). */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === "string") throw new Error("no port");
  return address.port;
}
