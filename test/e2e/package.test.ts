// The npm package as a user installs it (docs/package.md): `npm pack` once, publint and
// arethetypeswrong on the tarball, then `npm install <tarball>` into a project outside the
// repository (test/e2e/package-install.ts), where
// - only shiftlock and its dependencies (zod, ws) are installed: no hono, no TypeScript;
// - a plain Node ESM program acquires, watches (sees `acquired` and `released`) and
//   releases a claim against the e2e server;
// - a plain Node program writes once through `shiftlock/fence` and is refused once;
// - a TypeScript program (shiftlock/client and shiftlock/fence) type-checks against the shipped .d.ts with moduleResolution
//   `bundler` and `node16` (the repository's tsc, by path; skipLibCheck off);
// - esbuild bundles the client for browsers from node_modules, and that bundle takes,
//   watches and releases a claim in headless Chromium from another origin;
// - `npx shiftlock` runs the built CLI;
// and examples/worker-caller, copied out and installed from the same tarball, is bundled by
// `wrangler deploy --dry-run`, type-checked, and run in Miniflare next to the shiftlock
// Worker, calling it through a service binding. There `shiftlock/testing` (with the
// repository's miniflare, vitest and vitest-pool-workers linked in as the user's own) starts
// the packaged Worker for a Node program, and runs it as the auxiliary worker of the
// example's own vitest-pool-workers tests (docs/testing.md); and README's TypeScript
// examples for Node type-check there against the package and @types/ws.
import { cpSync, existsSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { build } from "esbuild";
import { Miniflare } from "miniflare";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { readWranglerConfig, DEV_AUTH_TOKENS } from "../../src/serve/local-server.ts";
import { claimRoundTripInBrowser } from "./browser-claim-roundtrip.ts";
import { chromiumMissing, launchChromium } from "./browser.ts";
import {
  cleanEnv,
  emptyProject,
  npmInstall,
  packRepository,
  REPO,
  repoBin,
  run,
  runOk,
  tempDir,
} from "./package-install.ts";

const NODE_PROGRAM = `
import WebSocket from "ws";
import { HttpClaimsBackend } from "shiftlock/client";

const [baseUrl, namespace, claimName] = process.argv.slice(2);
const claims = new HttpClaimsBackend({ baseUrl, token: "dev-token", namespace, WebSocket });
const watch = claims.watchClaim(claimName);
const items = watch[Symbol.asyncIterator]();
const snapshot = (await items.next()).value;
const held = await claims.acquireClaim({ claimName, generationId: "node-consumer", ttlMs: 30000 });
await claims.releaseClaim({ claimName, generationId: "node-consumer", token: held.fencingToken });
const events = [];
while (!events.includes("released")) {
  const next = await items.next();
  if (next.done) break;
  if (next.value.type === "event") events.push(next.value.reason);
}
watch.close();
await claims.close();
console.log(JSON.stringify({ snapshot: snapshot.type, fencingToken: String(held.fencingToken), events }));
`;

const TESTING_PROGRAM = `
import WebSocket from "ws";
import { HttpClaimsBackend, ShiftlockError } from "shiftlock/client";
import { startShiftlock } from "shiftlock/testing";

/** Watch, acquire and release one claim; the events seen and the fencing token. */
async function cycle(baseUrl, token) {
  const claims = new HttpClaimsBackend({ baseUrl, token, namespace: "app-tests", WebSocket });
  const watch = claims.watchClaim("leader");
  const items = watch[Symbol.asyncIterator]();
  const seen = [(await items.next()).value.type];
  const held = await claims.acquireClaim({ claimName: "leader", generationId: "app", ttlMs: 30000 });
  await claims.releaseClaim({ claimName: "leader", generationId: "app", token: held.fencingToken });
  while (!seen.includes("released")) seen.push((await items.next()).value.reason);
  watch.close();
  await claims.close();
  return { fencingToken: String(held.fencingToken), seen };
}

// Two servers at once: the local tokens by default, or exactly the ones given; each its own state.
const [local, custom] = await Promise.all([
  startShiftlock(),
  startShiftlock({ authTokens: [{ token: "app-test-token", role: "write", namespaces: ["app-tests"] }] }),
]);
try {
  const health = await (await local.fetch("/healthz")).json();
  // The pages are part of the Worker's bundle, so the packaged Worker serves them too.
  const dashboard = await local.fetch("/ui");
  const page = { status: dashboard.status, type: dashboard.headers.get("content-type"), html: (await dashboard.text()).includes("<html") };
  const first = await cycle(local.url, "dev-token");
  const again = await cycle(local.url, "dev-token");
  const refused = await cycle(custom.url, "dev-token").catch((err) => err instanceof ShiftlockError && err.code);
  const fresh = await cycle(custom.url, "app-test-token");
  console.log(JSON.stringify({ health, page, first, again, refused, fresh }));
} finally {
  await Promise.all([local.dispose(), custom.dispose()]);
}
`;

/** One fenced write and one refusal through `shiftlock/fence`, as a plain Node program. */
const FENCE_PROGRAM = `
import { FenceRejected, MemoryFence, claimFenceKey } from "shiftlock/fence";

const fence = new MemoryFence();
const key = claimFenceKey("prod", "ledger");
const ledger = [];
fence.guard(key, 2n, () => ledger.push("owner 2"));
let refused;
try {
  fence.guard(key, "1", () => ledger.push("stale owner 1"));
} catch (err) {
  refused = err instanceof FenceRejected ? err.toJSON().error : err;
}
console.log(JSON.stringify({ ledger, refused }));
`;

const TS_PROGRAM = `
import { GenerationSession, MemoryClaimsBackend, ShiftlockError, hasCode, type ClaimRecord } from "shiftlock/client";
import { FenceRejected, Fence, MemoryFence, fencedBatch, fencedPut, postgresFenced, sqliteFenced, type FenceCredential } from "shiftlock/fence";

const backend = new MemoryClaimsBackend();
const record: ClaimRecord = await backend.acquireClaim({ claimName: "a", generationId: "g", ttlMs: 1000 });
const token: bigint = record.fencingToken;
// @ts-expect-error a fencing token is a bigint, not a string: the types are real, not any
const wrong: string = record.fencingToken;
const session: Promise<GenerationSession> = GenerationSession.open({ service: "s", instanceId: "i", backend });
const err: unknown = new ShiftlockError("claim_held", "held");
if (hasCode(err, "claim_held")) console.log(err.code, token, wrong, session);
const lease = await (await session).claim("a").tryAcquire();
const credential: FenceCredential = lease.fence;
const written: number = new MemoryFence().guard(credential.key, credential.token, () => 1);
// @ts-expect-error a fence token is a bigint or a decimal string, not a number
new MemoryFence().guard(credential.key, 1, () => 1);
const refusal: FenceRejected | undefined = undefined;
console.log(written, refusal, Fence, fencedBatch, fencedPut, postgresFenced, sqliteFenced);
`;

/** Compiler options of a consumer: `lib` DOM for fetch/WebSocket (as a browser or Node app has), ESNext.Disposable for `await using`. */
function tsconfig(module: "preserve" | "node16", moduleResolution: "bundler" | "node16"): string {
  return JSON.stringify({
    compilerOptions: {
      target: "ES2022",
      module,
      moduleResolution,
      lib: ["ES2023", "ESNext.Disposable", "DOM"],
      types: [],
      strict: true,
      noEmit: true,
      skipLibCheck: false,
    },
    files: ["check.ts"],
  });
}

let work: string;
let tarball: string;
let consumer: string;

beforeAll(async () => {
  work = tempDir("shiftlock-package-");
  tarball = await packRepository(work);
  consumer = emptyProject("shiftlock-consumer-");
  // `ws` unversioned, as a user types it: the package's caret range shares that one copy.
  await npmInstall(consumer, [tarball, "ws"]);
}, 300_000);

afterAll(() => {
  for (const dir of [work, consumer]) if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
});

describe("the packed tarball", { timeout: 120_000 }, () => {
  it("passes publint (strict) and arethetypeswrong (ESM-only profile)", async () => {
    const publint = await run(repoBin("publint"), ["run", tarball, "--strict"], work);
    expect(publint.stdout + publint.stderr).toContain("All good!");
    expect(publint.code).toBe(0);
    const attw = await run(repoBin("attw"), [tarball, "--profile", "esm-only", "--format", "ascii"], work);
    expect(attw.code, attw.stdout + attw.stderr).toBe(0);
  });

  it("holds the built client, CLI, testing entry and Worker bundle only: no sources or tests", async () => {
    const { stdout } = await runOk("tar", ["tzf", tarball], work);
    const files = stdout.trim().split("\n");
    expect(files).toContain("package/lib/client/index.js");
    expect(files).toContain("package/lib/client/index.d.ts");
    expect(files).toContain("package/lib/client/fence/index.js");
    expect(files).toContain("package/lib/client/fence/index.d.ts");
    expect(files).toContain("package/lib/cli/main.js");
    expect(files).toContain("package/lib/testing/index.js");
    expect(files).toContain("package/lib/testing/index.d.ts");
    expect(files).toContain("package/bin/shiftlock.mjs");
    const worker = files.filter((f) => f.startsWith("package/lib/worker/")).sort();
    expect(worker).toEqual(["package/lib/worker/index.js", "package/lib/worker/worker.json"]);
    const outside = files.filter(
      (f) => !/^package\/(lib\/(client|protocol|core|cli|testing|worker)\/|bin\/|package\.json$|README\.md$)/.test(f),
    );
    expect(outside).toEqual([]);
    expect(files.filter((f) => f.endsWith(".ts") && !f.endsWith(".d.ts"))).toEqual([]);
  });

  it("installs shiftlock with zod and ws only (no devDependencies, no hono, no TypeScript)", async () => {
    const { stdout } = await runOk("npm", ["ls", "--all", "--parseable"], consumer);
    const names = stdout
      .trim()
      .split("\n")
      .slice(1)
      .map((path) => path.slice(path.lastIndexOf("node_modules/") + "node_modules/".length))
      .sort();
    expect(names).toEqual(["shiftlock", "ws", "zod"]);
  });
});

// tsc without skipLibCheck reads zod's declarations: ≈30 s per project on a busy 2-core machine.
describe("the installed package", { timeout: 240_000 }, () => {
  it("a Node ESM program acquires, watches and releases a claim against the server", async () => {
    writeFileSync(join(consumer, "claim-cycle.mjs"), NODE_PROGRAM);
    const claim = `package-${crypto.randomUUID()}`;
    const ran = await runOk(process.execPath, ["claim-cycle.mjs", inject("serverUrl"), "e2e-package", claim], consumer);
    expect(JSON.parse(ran.stdout)).toEqual({
      snapshot: "snapshot",
      fencingToken: "1",
      events: ["acquired", "released"],
    });
  });

  it("runs one fenced write and one refusal through shiftlock/fence", async () => {
    writeFileSync(join(consumer, "fenced-write.mjs"), FENCE_PROGRAM);
    const ran = await runOk(process.execPath, ["fenced-write.mjs"], consumer);
    expect(JSON.parse(ran.stdout)).toEqual({
      ledger: ["owner 2"],
      refused: {
        code: "fence_rejected",
        message: 'fence "prod/claims/ledger" refused token 1: it has accepted 2',
        key: "prod/claims/ledger",
        presented: "1",
        accepted: "2",
      },
    });
  });

  it("type-checks a TypeScript program with moduleResolution bundler and node16", async () => {
    writeFileSync(join(consumer, "check.ts"), TS_PROGRAM);
    writeFileSync(join(consumer, "tsconfig.bundler.json"), tsconfig("preserve", "bundler"));
    writeFileSync(join(consumer, "tsconfig.node16.json"), tsconfig("node16", "node16"));
    for (const project of ["tsconfig.bundler.json", "tsconfig.node16.json"]) {
      const tsc = await run(process.execPath, [join(REPO, "node_modules/typescript/bin/tsc"), "-p", project], consumer);
      expect(tsc.stdout + tsc.stderr, project).toBe("");
      expect(tsc.code, project).toBe(0);
    }
  });

  it("bundles for browsers with esbuild from node_modules, without Node modules or ws, and runs in Chromium", async () => {
    writeFileSync(join(consumer, "browser-entry.js"), 'export { HttpClaimsBackend } from "shiftlock/client";\n');
    const result = await build({
      absWorkingDir: consumer,
      entryPoints: ["browser-entry.js"],
      bundle: true,
      format: "esm",
      platform: "browser",
      target: "es2022",
      write: false,
      metafile: true,
      logLevel: "silent",
    });
    const inputs = Object.keys(result.metafile.inputs);
    expect(inputs).toContain("node_modules/shiftlock/lib/client/index.js");
    expect(inputs.filter((path) => !/^node_modules\/(shiftlock|zod)\/|^browser-entry\.js$/.test(path))).toEqual([]);
    const clientJs = result.outputFiles[0]?.text ?? "";
    // The page round trip needs Chromium: skipped with the reason outside CI, required in CI.
    const missing = chromiumMissing();
    if (missing !== undefined && process.env["CI"] !== "true") {
      console.warn(`not running the tarball's browser bundle in a page: ${missing}`);
      return;
    }
    const browser = await launchChromium();
    try {
      const apiUrl = inject("serverUrl");
      const args = { apiUrl, namespace: `e2e-package-${process.pid}`, claim: `browser-${crypto.randomUUID()}` };
      const roundTrip = await claimRoundTripInBrowser(browser, clientJs, args);
      expect(roundTrip.pageOrigin).not.toBe(new URL(apiUrl).origin);
      expect(roundTrip.seen).toEqual(["snapshot:owned", "released:unowned"]);
      expect(roundTrip.protocols).toEqual([""]); // a watch ticket opened it, not the token
    } finally {
      await browser.close();
    }
  });

  it("`npx shiftlock` runs the built CLI with no TypeScript installed", async () => {
    expect(existsSync(join(consumer, "node_modules", "typescript"))).toBe(false);
    const claim = `package-cli-${crypto.randomUUID()}`;
    const env = cleanEnv({
      SHIFTLOCK_URL: inject("serverUrl"),
      SHIFTLOCK_TOKEN: "dev-token",
      SHIFTLOCK_NAMESPACE: "e2e-package",
    });
    const acquired = await runOk(
      "npx",
      ["--no", "shiftlock", "claims", "acquire", claim, "--generation", "g1", "--json"],
      consumer,
      env,
    );
    expect(JSON.parse(acquired.stdout)).toMatchObject({ claim: { name: claim, fencingToken: "1", phase: "owned" } });
    const released = await run(
      "npx",
      ["--no", "shiftlock", "claims", "release", claim, "--generation", "g1", "--fencing-token", "1"],
      consumer,
      env,
    );
    expect(released.code, released.stderr).toBe(0);
    const usage = await run("npx", ["--no", "shiftlock", "claims", "frobnicate"], consumer, env);
    expect(usage.code).toBe(2);
    // The installed CLI finds the package's own version (lib/cli/ → package.json).
    const { version } = JSON.parse(readFileSync(join(REPO, "package.json"), "utf8")) as { version: string };
    expect((await runOk("npx", ["--no", "--", "shiftlock", "--version"], consumer, env)).stdout).toBe(`${version}\n`);
  });
});

describe("examples/worker-caller from the tarball", { timeout: 240_000 }, () => {
  let caller: string;
  let mf: Miniflare | undefined;

  beforeAll(async () => {
    caller = join(tempDir("shiftlock-worker-caller-"), "worker-caller");
    cpSync(join(REPO, "examples", "worker-caller"), caller, {
      recursive: true,
      filter: (src) => !/[/\\](node_modules|dist)$/.test(src),
    });
    // Only the package under test: the tools (wrangler, tsc, workers-types) are the repository's.
    const pkg = JSON.parse(readFileSync(join(caller, "package.json"), "utf8")) as Record<string, unknown>;
    delete pkg["devDependencies"];
    writeFileSync(join(caller, "package.json"), JSON.stringify(pkg, null, 2));
    await npmInstall(caller, [tarball]);
    // The user's own tools (shiftlock/testing's optional peer miniflare, vitest and the
    // Workers pool, and the ws types README asks for): the repository's pinned copies,
    // linked in rather than downloaded again.
    for (const scope of ["@cloudflare", "@types"]) mkdirSync(join(caller, "node_modules", scope), { recursive: true });
    for (const name of ["miniflare", "vitest", "@cloudflare/vitest-pool-workers", "@types/ws", "@types/node"]) {
      symlinkSync(join(REPO, "node_modules", name), join(caller, "node_modules", name), "dir");
    }
  }, 300_000);

  afterAll(async () => {
    try {
      await mf?.dispose();
    } finally {
      // Also when Miniflare failed to start (dispose rejects then).
      if (caller !== undefined) rmSync(join(caller, ".."), { recursive: true, force: true });
    }
  });

  it("type-checks against the installed package", async () => {
    const typeRoots = join(REPO, "node_modules", "@cloudflare");
    const tsc = await run(
      process.execPath,
      [join(REPO, "node_modules/typescript/bin/tsc"), "-p", ".", "--typeRoots", typeRoots, "--types", "workers-types"],
      caller,
    );
    expect(tsc.stdout + tsc.stderr).toBe("");
    expect(tsc.code).toBe(0);
  });

  it("`wrangler deploy --dry-run` bundles it; in Miniflare it takes, watches and releases a claim through the service binding", async () => {
    const dry = await run(repoBin("wrangler"), ["deploy", "--dry-run", "--outdir", "dist"], caller);
    expect(dry.code, dry.stdout + dry.stderr).toBe(0);
    expect(readFileSync(join(caller, "dist", "index.js"), "utf8")).toContain("HttpClaimsBackend = class");

    const shiftlock = readWranglerConfig(join(REPO, "wrangler.toml"));
    mf = new Miniflare({
      workers: [
        {
          name: "shiftlock-worker-caller",
          modules: true,
          scriptPath: join(caller, "dist", "index.js"),
          modulesRoot: join(caller, "dist"),
          compatibilityDate: "2026-04-26",
          serviceBindings: { SHIFTLOCK: shiftlock.name },
          bindings: { SHIFTLOCK_TOKEN: "dev-token", SHIFTLOCK_NAMESPACE: "worker-caller" },
        },
        {
          ...shiftlock.workerOptions,
          name: shiftlock.name,
          modules: true,
          scriptPath: join(REPO, "dist", "index.js"),
          modulesRoot: join(REPO, "dist"),
          bindings: { ...shiftlock.workerOptions.bindings, AUTH_TOKENS: DEV_AUTH_TOKENS },
        },
      ],
    });
    const claim = `caller-${crypto.randomUUID()}`;
    for (const fencingToken of ["1", "2"]) {
      const res = await mf.dispatchFetch(`http://caller.example/jobs/${claim}`, { method: "POST" });
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({ claim, fencingToken, events: ["acquired", "released"] });
    }
  });

  it("README's TypeScript examples for Node type-check against the package with @types/ws", async () => {
    const readme = readFileSync(join(REPO, "README.md"), "utf8");
    // The Workers snippet reads `env` and a file of the example: the example itself is checked above.
    const blocks = [...readme.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]!).filter((b) => !b.includes("env."));
    expect(blocks.length).toBeGreaterThanOrEqual(4);
    blocks.forEach((block, i) => writeFileSync(join(caller, `readme-${i}.ts`), `${block}\nexport {};\n`));
    const compilerOptions = {
      target: "ES2022",
      module: "preserve",
      moduleResolution: "bundler",
      lib: ["ES2023", "ESNext.Disposable", "DOM"],
      types: ["ws"],
      strict: true,
      noEmit: true,
      skipLibCheck: true,
    };
    writeFileSync(join(caller, "tsconfig.readme.json"), JSON.stringify({ compilerOptions, include: ["readme-*.ts"] }));
    const tsc = await run(
      process.execPath,
      [join(REPO, "node_modules/typescript/bin/tsc"), "-p", "tsconfig.readme.json"],
      caller,
    );
    expect(tsc.stdout + tsc.stderr).toBe("");
    expect(tsc.code).toBe(0);
  });

  it("`shiftlock/testing` starts the packaged Worker for a Node program: acquire, watch, release", async () => {
    writeFileSync(join(caller, "testing-cycle.mjs"), TESTING_PROGRAM);
    const ran = await runOk(process.execPath, ["testing-cycle.mjs"], caller);
    const cycle = (fencingToken: string) => ({ fencingToken, seen: ["snapshot", "acquired", "released"] });
    expect(JSON.parse(ran.stdout)).toEqual({
      health: { ok: true },
      page: { status: 200, type: "text/html; charset=utf-8", html: true },
      first: cycle("1"),
      again: cycle("2"),
      refused: "unauthorized",
      fresh: cycle("1"),
    });
  });

  it("its vitest-pool-workers tests run shiftlock as an auxiliary worker behind the SHIFTLOCK binding", async () => {
    const vitest = join(caller, "node_modules", "vitest", "vitest.mjs");
    const ran = await run(process.execPath, [vitest, "run", "--reporter", "dot"], caller, cleanEnv({ CI: "true" }));
    expect(ran.code, ran.stdout + ran.stderr).toBe(0);
    expect(ran.stdout).toMatch(/Tests\s+1 passed \(1\)/);
  });
});
