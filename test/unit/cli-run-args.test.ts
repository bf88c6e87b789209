// `claims run` / `coord run` in-process (`main`) against the in-memory backends: what the
// command line must look like, and that the exit status is the child's.
import { describe, expect, it } from "vitest";
import { main, type CliIo } from "../../src/cli/main.ts";
import { MemoryClaimsBackend } from "../../src/client/claims/memory-claims-backend.ts";
import { MemoryCoordinator } from "../../src/client/coord/memory-coord.ts";

function cli() {
  const err: string[] = [];
  const claims = new MemoryClaimsBackend({ namespace: "prod" });
  const io: CliIo = {
    stdout: () => undefined,
    stderr: (t) => err.push(t),
    env: { ...process.env },
    claims,
    coordinator: new MemoryCoordinator({ namespace: "prod" }),
  };
  const run = async (...argv: string[]) => {
    err.length = 0;
    return { code: await main(argv, io), err: err.join("") };
  };
  return { run, claims };
}

const node = (script: string): string[] => ["--", process.execPath, "-e", script];

describe("shiftlock … run (command line)", () => {
  it("needs the command after --, and nothing else between the claim and --", async () => {
    const { run } = cli();
    const missing = await run("claims", "run", "c", "--generation", "g");
    expect(missing.code).toBe(2);
    expect(missing.err).toContain("goes after --");
    const stray = await run("claims", "run", "c", "extra", "--generation", "g", ...node(""));
    expect(stray.code).toBe(2);
    expect(stray.err).toContain('unexpected argument "extra"');
    expect((await run("claims", "run", "--generation", "g", ...node(""))).code).toBe(2);
    expect((await run("coord", "run", "--volume", "v", "--store", "s", "--grace-ms", "x", ...node(""))).code).toBe(2);
    expect((await run("claims", "get", "c", "--grace-ms", "1")).err).toContain(
      "--grace-ms is not an option of claims get",
    );
    const both = await run("claims", "run", "c", "--generation", "g", "--wait", "1s", "--wait-ms", "1000", ...node(""));
    expect(both).toMatchObject({ code: 2, err: "shiftlock: give --wait or --wait-ms, not both (see --help)\n" });
    expect((await run("coord", "run", "--volume", "v", ...node(""))).err).toContain("coord run needs --store or --key");
  });

  it("returns the command's exit status and leaves the claim released", async () => {
    const { run, claims } = cli();
    const status = await run(
      "claims",
      "run",
      "c",
      "--generation",
      "g",
      ...node(
        "const e = process.env; process.exit(e.SHIFTLOCK_FENCING_TOKEN === '1' && e.SHIFTLOCK_FENCE_KEY === 'prod/claims/c' ? 9 : 1)",
      ),
    );
    expect(status.code).toBe(9);
    expect(await claims.getClaim("c")).toMatchObject({ phase: "unowned", reason: "released" });
  });

  it("refuses at once (status 1, claim_held) without --wait-ms when the claim is held", async () => {
    const { run, claims } = cli();
    await claims.acquireClaim({ claimName: "c", generationId: "other", ttlMs: 60_000 });
    const held = await run("claims", "run", "c", "--generation", "g", ...node("process.exit(0)"));
    expect(held.code).toBe(1);
    expect(held.err).toContain("claim_held");
  });

  it("coord run passes the epoch and the fence key, and returns the status", async () => {
    const { run } = cli();
    const script =
      "const e = process.env; process.exit(e.SHIFTLOCK_LEASE_EPOCH === '1' && e.SHIFTLOCK_FENCE_KEY === 'prod/scopes/v/s/' ? 6 : 1)";
    expect((await run("coord", "run", "--volume", "v", "--store", "s", ...node(script))).code).toBe(6);
  });
});
