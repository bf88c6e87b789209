// The npm package as a user installs it (docs/package.md): `npm pack` once, publint and
// arethetypeswrong on the tarball, then `npm install <tarball>` into a project outside the
// repository (test/e2e/package-install.ts), where
// - only shiftlock and its dependencies (zod, ws) are installed: no hono, no TypeScript;
// - a plain Node ESM program acquires, watches (sees `acquired` and `released`) and
//   releases a claim against the e2e server;
// - in a CommonJS project made by `npm init -y`, README's ESM snippet runs as `.mjs`, its
//   CommonJS one as `.js`, and a CommonJS program `require()`s every entry and does the
//   same claim cycle;
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
import { COMMONJS_PROGRAM, FENCE_PROGRAM, NODE_PROGRAM, TESTING_PROGRAM, TS_PROGRAM } from "./package-programs.ts";

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

describe("a CommonJS project made by `npm init -y`", { timeout: 240_000 }, () => {
  let app: string;
  beforeAll(async () => {
    app = tempDir("shiftlock-npm-init-");
    await runOk("npm", ["init", "-y"], app);
    await npmInstall(app, [tarball, "ws"]);
  }, 300_000);
  afterAll(() => rmSync(app, { recursive: true, force: true }));

  it("is CommonJS, as README's Node section says", () => {
    const pkg = JSON.parse(readFileSync(join(app, "package.json"), "utf8")) as { type?: string };
    expect(pkg.type ?? "commonjs").toBe("commonjs");
  });

  it("runs README's Node snippets as written: the ESM one saved as app.mjs, the CommonJS one as app.js", async () => {
    const readme = readFileSync(join(REPO, "README.md"), "utf8");
    const snippets = [...readme.matchAll(/```js\n\/\/ (app\.m?js)\b.*\n([\s\S]*?)```/g)];
    expect(snippets.map((m) => m[1])).toEqual(["app.mjs", "app.js"]);
    for (const [, file, code] of snippets) {
      // The snippets leave `token` to the reader; they construct a client and stop there.
      writeFileSync(join(app, file!), `const token = "dev-token";\n${code!}\nconsole.log(claims.constructor.name);\n`);
      const ran = await run(process.execPath, [file!], app);
      expect({ file, ...ran }).toEqual({ file, code: 0, stdout: "HttpClaimsBackend\n", stderr: "" });
    }
  });

  it("require()s shiftlock/client, /fence and /testing and does a claim cycle against the server, with nothing on stderr", async () => {
    writeFileSync(join(app, "claim-cycle.js"), COMMONJS_PROGRAM);
    const claim = `package-cjs-${crypto.randomUUID()}`;
    const ran = await run(process.execPath, ["claim-cycle.js", inject("serverUrl"), "e2e-package", claim], app);
    expect(ran.stderr).toBe("");
    expect(ran.code).toBe(0);
    expect(JSON.parse(ran.stdout)).toEqual({
      snapshot: "snapshot",
      fencingToken: "1",
      events: ["acquired", "released"],
      entries: ["function", "function"],
    });
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
