/**
 * Builds the pages (`/ui`, `/docs`) into one module the Worker bundles, `dist/pages/files.js`
 * (imported as `#pages`, package.json `imports`): each page's TypeScript entry
 * (src/pages/{ui,docs}/main.ts) bundled by esbuild for browsers together with what it imports
 * from the client, its HTML shell, and the one stylesheet, as strings keyed by the file's
 * path (`/ui/app.js`). wrangler.toml's `[build]` runs it before every `wrangler deploy` (and
 * so `npm run build`, `npm start` and `npm run build:lib`); the vitest config runs it before
 * the worker tests bundle the Worker.
 *
 * Guarantees: the output depends only on the sources (no source maps, no timestamps);
 * nothing is fetched from a network. Does not: serve anything (the Worker does, with its
 * headers: src/http/pages.ts).
 */
import { mkdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { build, type Plugin } from "esbuild";

/** Where the module lands: package.json's `imports["#pages"]` names `files.js` in it. */
export const PAGES_OUT_DIR = "dist/pages";

/** One page: its entry, shell and stylesheet as they are served (`/ui/app.js` ← `ui/app.js`). */
const PAGES = ["ui", "docs"] as const;

/**
 * zod's namespace export reaches its ≈ 40 message locales (≈ 260 KB of the 490 KB bundle);
 * the pages use only English, zod's default, so the others become a stub that is never called.
 */
const ENGLISH_ONLY: Plugin = {
  name: "zod-english-only",
  setup(build) {
    // esbuild's filters are Go regular expressions (no lookahead): English is let through below.
    build.onResolve({ filter: /^\.\/[a-zA-Z-]+\.js$/ }, (args) =>
      args.path !== "./en.js" && /[\\/]zod[\\/]v4[\\/]locales[\\/]index\.js$/.test(args.importer)
        ? { path: args.path, namespace: "zod-locale-stub" }
        : undefined,
    );
    build.onLoad({ filter: /.*/, namespace: "zod-locale-stub" }, () => ({
      contents: "export default function () { return { localeError: () => undefined }; }",
    }));
  },
};

/** Build every page into `outDir/files.js` (default {@link PAGES_OUT_DIR}); ≈ 0.3 s. */
export async function buildPages(root = process.cwd(), outDir = join(root, PAGES_OUT_DIR)): Promise<void> {
  const files: Record<string, string> = {};
  const stylesheet = readFileSync(resolve(root, "src/pages/style.css"), "utf8");
  for (const page of PAGES) {
    const source = resolve(root, "src/pages", page);
    const bundle = await build({
      entryPoints: [join(source, "main.ts")],
      bundle: true,
      minify: true,
      format: "iife",
      platform: "browser",
      target: "es2022",
      legalComments: "none",
      logLevel: "error",
      write: false,
      plugins: [ENGLISH_ONLY],
    });
    files[`/${page}/app.js`] = bundle.outputFiles.map((file) => file.text).join("");
    files[`/${page}/index.html`] = readFileSync(join(source, "index.html"), "utf8");
    files[`/${page}/app.css`] = stylesheet;
  }
  rmSync(outDir, { recursive: true, force: true });
  mkdirSync(outDir, { recursive: true });
  writeFileSync(join(outDir, "files.js"), `export default ${JSON.stringify(files)};\n`);
}

// Run as a script (wrangler's [build]); compared by real path, as the script may be reached through a symlink.
const script = process.argv[1];
if (script !== undefined && realpathSync(script) === fileURLToPath(import.meta.url)) await buildPages();
