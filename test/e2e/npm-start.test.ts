// `npm start` as a newcomer runs it, build included: what it prints. Once it serves, the
// addresses of the API, the dashboard and the API reference, each answering; none of
// wrangler's build output (banner, update notice, environment warning, bindings table,
// "--dry-run: exiting now."). A build that fails still shows why, and nothing serves.
// Each run is in a directory of its own whose entries link to this repository's, so the
// build writes its own dist/ and never the one other tests' servers read.
import { spawn } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterEach, expect, it } from "vitest";
import { freePort, groupGone, removeState } from "./server.ts";

/** Entries of the repository a run does not share: what the build and the server write. */
const OWN = new Set([".git", "dist", ".wrangler", "lib", "wrangler.toml"]);

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

/** A directory that looks like a fresh clone (links to the repository's entries), with `wrangler.toml` as given. */
function checkout(wranglerToml: string): string {
  const dir = mkdtempSync(join(tmpdir(), "shiftlock-npm-start-"));
  for (const entry of readdirSync(".")) if (!OWN.has(entry)) symlinkSync(resolve(entry), join(dir, entry));
  writeFileSync(join(dir, "wrangler.toml"), wranglerToml);
  cleanups.push(() => Promise.resolve(removeState(dir)));
  return dir;
}

interface Run {
  /** stdout and stderr as they came. */
  output(): string;
  /** Resolves once the output contains `text` (rejects if the process exits first). */
  printed(text: string): Promise<void>;
  exited: Promise<number | null>;
}

function npmStart(dir: string, port: number): Run {
  const child = spawn("npm", ["start", "--", "--port", String(port), "--persist-to", join(dir, ".wrangler/state")], {
    cwd: dir,
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, WRANGLER_SEND_METRICS: "false", NO_COLOR: "1" },
  });
  let output = "";
  const watchers: (() => void)[] = [];
  const take = (data: Buffer): void => {
    output += data.toString();
    for (const watcher of watchers) watcher();
  };
  child.stdout.on("data", take);
  child.stderr.on("data", take);
  const exited = new Promise<number | null>((done) => child.once("exit", (code) => done(code)));
  cleanups.push(async () => {
    if (child.exitCode === null && child.signalCode === null) {
      process.kill(-child.pid!, "SIGTERM");
      await exited;
    }
    await groupGone(child.pid!, "SIGTERM");
  });
  return {
    output: () => output,
    exited,
    printed: (text) =>
      new Promise<void>((done, fail) => {
        const check = (): void => {
          if (output.includes(text)) done();
        };
        watchers.push(check);
        check();
        void exited.then((code) => fail(new Error(`npm start exited (${code}) before printing ${text}:\n${output}`)));
      }),
  };
}

const WRANGLER_NOISE = [
  /Multiple environments/,
  /--dry-run: exiting now/,
  /update available/i,
  /wrangler \d/i,
  /Total Upload/,
];

it("prints where the API, /ui and /docs are, each answering, and none of wrangler's build output", async () => {
  const port = await freePort();
  const dir = checkout(readFileSync("wrangler.toml", "utf8"));
  const run = npmStart(dir, port);
  await run.printed("API docs");
  const base = `http://127.0.0.1:${port}`;
  const lines = run.output().split("\n");
  expect(lines).toContain(`  API        ${base}  (Authorization: Bearer dev-token; dev-admin-token may also evict)`);
  expect(lines).toContain(`  dashboard  ${base}/ui`);
  expect(lines).toContain(`  API docs   ${base}/docs`);
  for (const path of ["/ui", "/docs", "/healthz"]) expect((await fetch(`${base}${path}`)).status, path).toBe(200);
  // Both local tokens, by name and role (docs/operators.md).
  for (const [token, me] of [
    ["dev-token", { name: "dev", role: "write" }],
    ["dev-admin-token", { name: "dev-admin", role: "admin" }],
  ] as const) {
    const res = await fetch(`${base}/v1/ns/demo/whoami`, { headers: { Authorization: `Bearer ${token}` } });
    expect(await res.json()).toEqual(me);
  }
  for (const noise of WRANGLER_NOISE) expect(run.output()).not.toMatch(noise);
}, 120_000);

it("shows why a build failed, and serves nothing", async () => {
  const port = await freePort();
  const toml = readFileSync("wrangler.toml", "utf8").replace(/^main = .*$/m, 'main = "broken.ts"');
  const dir = checkout(toml);
  writeFileSync(join(dir, "broken.ts"), 'export default { fetch() { return new Response("x" } };\n');
  const run = npmStart(dir, port);
  expect(await run.exited).not.toBe(0);
  expect(run.output()).toMatch(/ERROR/);
  expect(run.output()).toMatch(/Expected "\)" but found "}"/);
  expect(run.output()).not.toMatch(/listening on/);
}, 120_000);
