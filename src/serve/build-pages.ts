/**
 * Builds the pages (`/ui`, `/docs`) into the Worker's static assets directory (wrangler.toml
 * `[assets]`, `dist/pages`): each page's TypeScript entry (src/pages/{ui,docs}/main.ts)
 * bundled by esbuild for browsers together with what it imports from the client, its HTML
 * shell, and the one stylesheet. wrangler.toml's `[build]` runs it before every
 * `wrangler deploy` (and so `npm run build`); the vitest config runs it before the worker
 * tests read wrangler.toml.
 *
 * Guarantees: the output depends only on the sources (no source maps, no timestamps);
 * nothing is fetched from a network. Does not: serve anything (the Worker does, with its
 * headers, from the `ASSETS` binding: src/http/pages.ts).
 */
import { copyFileSync, mkdirSync, realpathSync, rmSync } from "node:fs";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { build, type Plugin } from "esbuild";

/** Where the assets land: wrangler.toml's `[assets] directory`. */
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

/** Build every page into `outDir` (default {@link PAGES_OUT_DIR}); ≈ 0.3 s. */
export async function buildPages(root = process.cwd(), outDir = join(root, PAGES_OUT_DIR)): Promise<void> {
  for (const page of PAGES) {
    const source = resolve(root, "src/pages", page);
    // Only the pages' own folders: the directory itself is in git (see .gitignore).
    rmSync(join(outDir, page), { recursive: true, force: true });
    mkdirSync(join(outDir, page), { recursive: true });
    await build({
      entryPoints: [join(source, "main.ts")],
      outfile: join(outDir, page, "app.js"),
      bundle: true,
      minify: true,
      format: "iife",
      platform: "browser",
      target: "es2022",
      legalComments: "none",
      logLevel: "error",
      plugins: [ENGLISH_ONLY],
    });
    copyFileSync(join(source, "index.html"), join(outDir, page, "index.html"));
    copyFileSync(resolve(root, "src/pages/style.css"), join(outDir, page, "app.css"));
  }
}

// Run as a script (wrangler's [build]); compared by real path, as the script may be reached through a symlink.
const script = process.argv[1];
if (script !== undefined && realpathSync(script) === fileURLToPath(import.meta.url)) await buildPages();
