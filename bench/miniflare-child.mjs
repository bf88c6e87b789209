/**
 * Diagnostic server for `node bench/run.mjs --server=miniflare`: serves the deployable
 * bundle (`wrangler deploy --dry-run` output) with Miniflare directly, without the
 * `wrangler dev` proxy, so the benchmark can show how much of a figure is the dev proxy.
 *
 * Not what `npm start` runs: its figures are labelled as such. Same bindings, compatibility
 * date and flags as wrangler.toml, the same dev-only token, SQLite-backed objects persisted
 * to a temporary directory. Prints `READY <url>` on stdout once it serves.
 *
 *   node bench/miniflare-child.mjs <bundleDir> <stateDir> <port>
 */
import { readFileSync } from "node:fs";
import { Miniflare } from "miniflare";
import { MINIFLARE_CHILD_USAGE, parseMiniflareChildArgs } from "./options.mjs";
import { parseOrExit } from "../src/cli/options.mjs";

const { bundleDir, stateDir, port } = parseOrExit("miniflare-child", MINIFLARE_CHILD_USAGE, () =>
  parseMiniflareChildArgs(process.argv.slice(2)),
);
const toml = readFileSync("wrangler.toml", "utf8");
const compatibilityDate = /^compatibility_date\s*=\s*"([^"]+)"/m.exec(toml)?.[1];
const flags = /^compatibility_flags\s*=\s*\[([^\]]*)\]/m.exec(toml)?.[1] ?? "";
/** @type {Record<string, string>} */
const vars = {};
const varsSection = /^\[vars\]\n([\s\S]*?)(?:\n\[|$)/m.exec(toml)?.[1] ?? "";
for (const [, name, value] of varsSection.matchAll(/^(\w+)\s*=\s*"([^"]*)"/gm)) {
  if (name !== undefined && value !== undefined) vars[name] = value;
}
// The dev-only token list `npm start` passes (package.json), never a deployed value.
const pkg = /** @type {{ scripts: { start: string } }} */ (JSON.parse(readFileSync("package.json", "utf8")));
const tokensLiteral = /AUTH_TOKENS:"((?:[^"\\]|\\.)*)"/.exec(pkg.scripts.start)?.[1];
if (tokensLiteral === undefined) throw new Error("package.json's start script passes no AUTH_TOKENS");
const authTokens = /** @type {string} */ (JSON.parse(`"${tokensLiteral}"`));

// Every [[durable_objects.bindings]] of wrangler.toml; all classes are SQLite-backed there.
/** @type {Record<string, { className: string, useSQLite: boolean }>} */
const durableObjects = {};
for (const [, name, className] of toml.matchAll(/name\s*=\s*"(\w+)"\s*\nclass_name\s*=\s*"(\w+)"/g)) {
  if (name !== undefined && className !== undefined) durableObjects[name] = { className, useSQLite: true };
}

const mf = new Miniflare({
  host: "127.0.0.1",
  port,
  modules: true,
  scriptPath: `${bundleDir}/index.js`,
  modulesRoot: bundleDir,
  compatibilityDate,
  compatibilityFlags: [...flags.matchAll(/"([^"]+)"/g)].map((m) => m[1]),
  bindings: { ...vars, AUTH_TOKENS: authTokens },
  durableObjects,
  durableObjectsPersist: stateDir,
});
const url = await mf.ready;
console.log(`READY ${url.origin}`);
process.on("SIGTERM", () => {
  mf.dispose().then(
    () => process.exit(0),
    () => process.exit(1),
  );
});
