// `shiftlock claims run` / `shiftlock coord run` as processes (bin/shiftlock.mjs) against the
// real server, each holding a lease for a real child process: the child's status comes
// back, the lease's variables reach it, a loss stops it (SIGTERM, then SIGKILL after the
// grace period) with status 4, Ctrl-C is forwarded and releases, and a waiting run acquires
// when the holder releases; a registered generation's claim is bound to the lease the run
// keeps itself. Losses are forced through the API (a commit to another generation, a deleted
// coord lease, an operator's `shiftlock claims evict`, the end of a generation's lease),
// never by sleeping past a deadline.
import { spawn, type ChildProcess } from "node:child_process";
import { describe, expect, inject, it } from "vitest";
import { HttpClaimsBackend } from "../../src/client/claims/http-claims-backend.ts";

const namespace = `e2e-run-${process.pid}`;
const TOKEN = "dev-token";

interface Running {
  proc: ChildProcess;
  /** Resolves with the first stdout (or stderr) line matching `pattern`. */
  line(pattern: RegExp, stream?: "stdout" | "stderr"): Promise<string>;
  /** Resolves with the exit status (128 + n for a signal) once the process ended. */
  exited: Promise<number>;
  stdout(): string;
  stderr(): string;
}

/** `shiftlock <args>` with the e2e server's settings; `-- node -e <script>` is the child. */
function shiftlock(args: string[], script?: string, token = TOKEN): Running {
  const child = script === undefined ? [] : ["--", process.execPath, "-e", script];
  const proc = spawn(process.execPath, ["bin/shiftlock.mjs", ...args, ...child], {
    stdio: ["pipe", "pipe", "pipe"],
    env: { ...process.env, SHIFTLOCK_URL: inject("serverUrl"), SHIFTLOCK_TOKEN: token, SHIFTLOCK_NAMESPACE: namespace },
  });
  const text = { stdout: "", stderr: "" };
  const watchers: { pattern: RegExp; stream: "stdout" | "stderr"; resolve: (line: string) => void }[] = [];
  const check = (): void => {
    for (const w of [...watchers]) {
      const found = text[w.stream].split("\n").find((l) => w.pattern.test(l));
      if (found !== undefined) {
        watchers.splice(watchers.indexOf(w), 1);
        w.resolve(found);
      }
    }
  };
  proc.stdout?.on("data", (d: Buffer) => ((text.stdout += d.toString()), check()));
  proc.stderr?.on("data", (d: Buffer) => ((text.stderr += d.toString()), check()));
  const exited = new Promise<number>((resolve) => {
    proc.once("exit", (code, signal) => resolve(code ?? 128 + (signal === "SIGKILL" ? 9 : 15)));
  });
  return {
    proc,
    exited,
    stdout: () => text.stdout,
    stderr: () => text.stderr,
    line: (pattern, stream = "stdout") =>
      new Promise<string>((resolve, reject) => {
        watchers.push({ pattern, stream, resolve });
        check();
        void exited.then(() => {
          check();
          reject(new Error(`exited before printing ${String(pattern)}:\n${text.stdout}\n${text.stderr}`));
        });
      }),
  };
}

/** Child scripts. Each prints one JSON line of what it received first. */
const REPORT_ENV = `const e = process.env; console.log(JSON.stringify({ pid: process.pid, claim: e.SHIFTLOCK_CLAIM,
  token: e.SHIFTLOCK_FENCING_TOKEN, generation: e.SHIFTLOCK_GENERATION, epoch: e.SHIFTLOCK_LEASE_EPOCH,
  leaseId: e.SHIFTLOCK_LEASE_ID, inherited: e.SHIFTLOCK_URL }));`;
const STAY = `setInterval(() => {}, 1000);`;
const ON_TERM_EXIT_0 = `process.on("SIGTERM", () => { console.log("got SIGTERM"); process.exit(0); });`;
const IGNORE_TERM = `process.on("SIGTERM", () => console.log("ignoring SIGTERM"));`;
/** Ends when shiftlock's stdin (which the child shares) is closed by the test. */
const UNTIL_STDIN_ENDS = `process.stdin.resume(); process.stdin.on("end", () => process.exit(0));`;

interface Report {
  pid: number;
  claim?: string;
  token?: string;
  generation?: string;
  epoch?: string;
  leaseId?: string;
  inherited?: string;
}
const report = async (run: Running): Promise<Report> => JSON.parse(await run.line(/^\{"pid"/)) as Report;

function claims(): HttpClaimsBackend {
  return new HttpClaimsBackend({ baseUrl: inject("serverUrl"), token: TOKEN, namespace });
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

// Each run starts Node twice (shiftlock and its child): generous timeouts.
describe("shiftlock claims run / coord run (processes)", { timeout: 60_000 }, () => {
  it("runs the command with the lease's variables, returns its status and releases", async () => {
    const claim = `run-${crypto.randomUUID()}`;
    const run = shiftlock(["claims", "run", claim, "--generation", "g1"], `${REPORT_ENV} process.exit(7);`);
    const seen = await report(run);
    expect(await run.exited).toBe(7);
    expect(seen).toMatchObject({ claim, token: "1", generation: "g1", inherited: inject("serverUrl") });
    const record = await claims().getClaim(claim);
    expect(record).toMatchObject({ phase: "unowned", reason: "released", previousOwner: "g1" });
  });

  it("reports a command ended by a signal as 128 + n", async () => {
    const claim = `run-${crypto.randomUUID()}`;
    const run = shiftlock(["claims", "run", claim, "--generation", "g1"], `process.kill(process.pid, "SIGTERM");`);
    expect(await run.exited).toBe(143);
  });

  it("stops a command that outlives its lease with SIGTERM and exits 4", async () => {
    const claim = `run-${crypto.randomUUID()}`;
    const args = ["claims", "run", claim, "--generation", "g1", "--ttl-ms", "1500"];
    const run = shiftlock(args, `${REPORT_ENV} ${ON_TERM_EXIT_0} ${STAY}`);
    const { token } = await report(run);
    // Another generation takes the claim over (a committed transfer): the next renew is refused.
    const backend = claims();
    const move = { claimName: claim, fromGeneration: "g1", toGeneration: "g2" };
    await backend.prepareTransfer({ ...move, token: BigInt(token ?? ""), ttlMs: 15_000 });
    await backend.commitTransfer({ ...move, expectedToken: BigInt(token ?? ""), ttlMs: 15_000 });
    expect(await run.exited).toBe(4);
    expect(run.stdout()).toContain("got SIGTERM");
    expect(run.stderr()).toMatch(/lease lost/);
    expect(await backend.getClaim(claim)).toMatchObject({ ownerGeneration: "g2", phase: "owned" });
    await backend.close();
  });

  it("an operator's `shiftlock claims evict` stops the command as a loss (exit 4, naming evicted)", async () => {
    const claim = `run-${crypto.randomUUID()}`;
    const args = ["claims", "run", claim, "--generation", "g1", "--ttl-ms", "1500"];
    const run = shiftlock(args, `${REPORT_ENV} ${ON_TERM_EXIT_0} ${STAY}`);
    const { token } = await report(run);
    const evict = shiftlock(["claims", "evict", claim, "--note", "stuck job", "--json"], undefined, "dev-admin-token");
    expect(await evict.exited).toBe(0);
    expect(JSON.parse(evict.stdout())).toMatchObject({ claim: { phase: "unowned", reason: "evicted" } });
    // The holder's next renew is refused `evicted`: its command is stopped, the run exits 4.
    expect(await run.exited).toBe(4);
    expect(run.stdout()).toContain("got SIGTERM");
    expect(run.stderr()).toMatch(/lease was lost while the command ran \(evicted: /);
    // Nobody holds it; the next acquire gets a greater token.
    const backend = claims();
    const next = await backend.acquireClaim({ claimName: claim, generationId: "g2", ttlMs: 15_000 });
    expect(next.fencingToken).toBe(BigInt(token ?? "") + 1n);
    await backend.close();
  });

  it("a registered generation: the claim is bound to the lease the run keeps; the lease's end stops the command", async () => {
    const claim = `run-${crypto.randomUUID()}`;
    const generation = `cron-${crypto.randomUUID()}`;
    const backend = claims();
    await backend.registerGeneration({ id: generation, service: "cron", instanceId: "host-1" });
    const args = ["claims", "run", claim, "--generation", generation, "--ttl-ms", "3000"];
    const run = shiftlock(args, `${REPORT_ENV} ${ON_TERM_EXIT_0} ${STAY}`);
    const { token } = await report(run);
    expect(token).toBe("1");
    expect(await backend.getClaim(claim)).toMatchObject({ ownerGeneration: generation, bound: true, leaseEpoch: 1n });
    // The run keeps the generation's lease over the lease channel; ending it ends the claim.
    await backend.endGenerationLease(generation);
    expect(await run.exited).toBe(4);
    expect(run.stdout()).toContain("got SIGTERM");
    expect(run.stderr()).toMatch(/lease was lost while the command ran/);
    expect((await backend.getClaim(claim)).phase).toBe("unowned");
    await backend.close();
  });

  it("a write token cannot evict (exit 1, forbidden)", async () => {
    const claim = `run-${crypto.randomUUID()}`;
    const backend = claims();
    await backend.acquireClaim({ claimName: claim, generationId: "g1", ttlMs: 15_000 });
    const evict = shiftlock(["claims", "evict", claim]);
    expect(await evict.exited).toBe(1);
    expect(evict.stderr()).toContain("forbidden");
    expect(await backend.getClaim(claim)).toMatchObject({ phase: "owned", ownerGeneration: "g1" });
    await backend.close();
  });

  it("kills a command that ignores SIGTERM once the grace period is over", async () => {
    const claim = `run-${crypto.randomUUID()}`;
    const args = ["claims", "run", claim, "--generation", "g1", "--ttl-ms", "1500", "--grace-ms", "300"];
    const run = shiftlock(args, `${REPORT_ENV} ${IGNORE_TERM} ${STAY}`);
    const { pid, token } = await report(run);
    const backend = claims();
    const move = { claimName: claim, fromGeneration: "g1", toGeneration: "g2" };
    await backend.prepareTransfer({ ...move, token: BigInt(token ?? ""), ttlMs: 15_000 });
    await backend.commitTransfer({ ...move, expectedToken: BigInt(token ?? ""), ttlMs: 15_000 });
    expect(await run.exited).toBe(4);
    expect(run.stdout()).toContain("ignoring SIGTERM");
    expect(run.stderr()).toContain("SIGKILL");
    expect(alive(pid)).toBe(false);
    await backend.close();
  });

  it("forwards Ctrl-C (SIGINT) to the command and releases the claim", async () => {
    const claim = `run-${crypto.randomUUID()}`;
    const run = shiftlock(["claims", "run", claim, "--generation", "g1"], `${REPORT_ENV} ${STAY}`);
    const { pid } = await report(run);
    run.proc.kill("SIGINT");
    expect(await run.exited).toBe(130); // the command died of the forwarded SIGINT
    expect(alive(pid)).toBe(false);
    expect(await claims().getClaim(claim)).toMatchObject({ phase: "unowned", reason: "released" });
  });

  it("waits for a held claim and runs as soon as the holder releases it", async () => {
    const claim = `run-${crypto.randomUUID()}`;
    const holder = shiftlock(["claims", "run", claim, "--generation", "g1"], `${REPORT_ENV} ${UNTIL_STDIN_ENDS}`);
    expect((await report(holder)).token).toBe("1");
    const waiter = shiftlock(
      ["claims", "run", claim, "--generation", "g2", "--wait-ms", "50000"],
      `${REPORT_ENV} process.exit(0);`,
    );
    await waiter.line(/is held by g1 .*waiting up to 50000 ms/, "stderr");
    holder.proc.stdin?.end(); // the holder's command ends, then it releases
    expect(await holder.exited).toBe(0);
    const seen = await report(waiter);
    expect(seen).toMatchObject({ token: "2", generation: "g2" });
    expect(await waiter.exited).toBe(0);
    expect(waiter.stderr().match(/waiting up to/g)).toHaveLength(1);
  });

  it("coord run: the lease epoch reaches the command, its status comes back, a lost lease stops it", async () => {
    const scope = ["--volume", `vol-${crypto.randomUUID()}`, "--store", "main"];
    const first = shiftlock(["coord", "run", ...scope], `${REPORT_ENV} process.exit(3);`);
    const seen = await report(first);
    expect(await first.exited).toBe(3);
    expect(seen.epoch).toBe("1");

    const second = shiftlock(["coord", "run", ...scope, "--ttl-ms", "1500"], `${REPORT_ENV} ${ON_TERM_EXIT_0} ${STAY}`);
    const { epoch, leaseId } = await report(second);
    expect(epoch).toBe("2");
    // Someone deletes the lease: the next keepalive answers lease_lost.
    const url = `${inject("serverUrl")}/v1/ns/${namespace}/volumes/${scope[1]}/stores/main/leases/${leaseId}`;
    const res = await fetch(url, { method: "DELETE", headers: { authorization: `Bearer ${TOKEN}` } });
    expect(res.status).toBe(204);
    expect(await second.exited).toBe(4);
    expect(second.stdout()).toContain("got SIGTERM");
  });
});
