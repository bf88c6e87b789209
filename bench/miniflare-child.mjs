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

const [bundleDir, stateDir, port] = process.argv.slice(2);
const toml = readFileSync("wrangler.toml", "utf8");
const compatibilityDate = /^compatibility_date\s*=\s*"([^"]+)"/m.exec(toml)?.[1];
const flags = /^compatibility_flags\s*=\s*\[([^\]]*)\]/m.exec(toml)?.[1] ?? "";
const vars = {};
const varsSection = /^\[vars\]\n([\s\S]*?)(?:\n\[|$)/m.exec(toml)?.[1] ?? "";
for (const m of varsSection.matchAll(/^(\w+)\s*=\s*"([^"]*)"/gm)) vars[m[1]] = m[2];
// The dev-only token list `npm start` passes (package.json), never a deployed value.
const start = JSON.parse(readFileSync("package.json", "utf8")).scripts.start;
const authTokens = JSON.parse(`"${/AUTH_TOKENS:"((?:[^"\\]|\\.)*)"/.exec(start)[1]}"`);

// Every [[durable_objects.bindings]] of wrangler.toml; all classes are SQLite-backed there.
const durableObjects = {};
for (const m of toml.matchAll(/name\s*=\s*"(\w+)"\s*\nclass_name\s*=\s*"(\w+)"/g)) {
  durableObjects[m[1]] = { className: m[2], useSQLite: true };
}

const mf = new Miniflare({
  host: "127.0.0.1",
  port: Number(port),
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
