/**
 * The package as a user gets it, for test/e2e/package.test.ts: `npm pack` of this
 * repository (its `prepack` builds lib/ with tsc) and `npm install <tarball>` into
 * projects in the system's temp directory, outside the repository, so nothing resolves
 * through the repository's node_modules (no TypeScript, hono or wrangler).
 *
 * Guarantees: every npm command runs without the `npm_*` variables of an enclosing
 * `npm test` (they would point npm at this repository), prefers the local npm cache and
 * falls back to the registry (the only network CI has); a failing command rejects with its
 * output. The repository's own tools (tsc, wrangler) are run by path: the temp projects
 * never install them.
 * Does not: clean up (the caller removes the directory it asked for).
 */
import { execFile } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

/** The repository (tests run from its root). */
export const REPO = resolve(".");

/** A tool of the repository's node_modules/.bin, by absolute path. */
export function repoBin(name: string): string {
  return join(REPO, "node_modules", ".bin", name);
}

export interface Ran {
  code: number;
  stdout: string;
  stderr: string;
}

/** The environment for child processes: this one without npm's per-run variables. */
export function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, WRANGLER_SEND_METRICS: "false", NO_COLOR: "1", ...extra };
  for (const key of Object.keys(env)) if (key.toLowerCase().startsWith("npm_")) delete env[key];
  return env;
}

/** Run `file args` in `cwd`; resolves with its status and output (never rejects). */
export function run(file: string, args: string[], cwd: string, env = cleanEnv()): Promise<Ran> {
  return new Promise((done) => {
    execFile(file, args, { cwd, env, timeout: 240_000, maxBuffer: 16 * 1024 * 1024 }, (err, stdout, stderr) => {
      const code = err === null ? 0 : typeof err.code === "number" ? err.code : -1;
      done({ code, stdout, stderr });
    });
  });
}

/** Like {@link run}, but rejects unless the status is 0. */
export async function runOk(file: string, args: string[], cwd: string, env = cleanEnv()): Promise<Ran> {
  const ran = await run(file, args, cwd, env);
  if (ran.code !== 0) {
    throw new Error(`${file} ${args.join(" ")} (in ${cwd}) exited ${ran.code}:\n${ran.stdout}\n${ran.stderr}`);
  }
  return ran;
}

/** A fresh directory in the system's temp directory. */
export function tempDir(prefix: string): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

/** `npm pack` of the repository into `dir`; returns the tarball's absolute path. */
export async function packRepository(dir: string): Promise<string> {
  const { stdout } = await runOk("npm", ["pack", "--json", "--pack-destination", dir], REPO);
  const [entry] = JSON.parse(stdout.slice(stdout.indexOf("["))) as [{ filename: string }];
  return join(dir, entry.filename);
}

/** `npm install` of `specs` (a tarball path among them) into the project at `dir`. */
export async function npmInstall(dir: string, specs: string[]): Promise<void> {
  await runOk("npm", ["install", ...specs, "--prefer-offline", "--no-audit", "--no-fund", "--loglevel=error"], dir);
}

/** A new ESM project (`"type": "module"`) in the temp directory; returns its path. */
export function emptyProject(prefix: string): string {
  const dir = tempDir(prefix);
  writeFileSync(join(dir, "package.json"), JSON.stringify({ name: "consumer", private: true, type: "module" }));
  return dir;
}
