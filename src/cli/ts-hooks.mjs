/**
 * Node module hooks that let plain `node` run this repository's TypeScript sources
 * without a build step: `.ts` files are transpiled on load with the TypeScript compiler.
 * Node 20.20 has no `--experimental-strip-types`, so this is the zero-extra-dependency way
 * to run the CLI and the demo. Registered by `bin/shiftlock.mjs` and
 * `src/cli/register-ts.mjs`.
 *
 * Guarantees: output is cached under node_modules/.cache/shiftlock-ts (keyed by path,
 * size and mtime), so TypeScript itself is loaded only when a source changed; a read-only
 * checkout still works, uncached. Every other file (.mjs, .js, packages) loads as usual.
 * Does not: type-check (types are only erased; `npx tsc --noEmit` checks them), bundle,
 * or resolve imports without their `.ts` extension.
 */
import { createHash } from "node:crypto";
import { mkdir, readFile, stat, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const cacheDir = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "node_modules", ".cache", "shiftlock-ts");
/** @type {Promise<typeof import("typescript")> | undefined} */
let tsPromise;

/**
 * @param {string} fileName
 * @param {string} source TypeScript
 * @returns {Promise<string>} JavaScript with an inline source map
 */
async function transpile(fileName, source) {
  tsPromise ??= import("typescript").then((m) => m.default);
  const ts = await tsPromise;
  const { outputText } = ts.transpileModule(source, {
    fileName,
    compilerOptions: {
      module: ts.ModuleKind.ESNext,
      target: ts.ScriptTarget.ES2022,
      verbatimModuleSyntax: true,
      inlineSourceMap: true,
    },
  });
  return outputText;
}

/** @type {import("node:module").LoadHook} */
export async function load(url, context, nextLoad) {
  if (!url.startsWith("file:") || !url.endsWith(".ts")) return nextLoad(url, context);
  const fileName = fileURLToPath(url);
  const info = await stat(fileName);
  const key = createHash("sha1").update(`${fileName}\0${info.size}\0${info.mtimeMs}`).digest("hex");
  const cached = join(cacheDir, `${key}.mjs`);
  let source;
  try {
    source = await readFile(cached, "utf8");
  } catch {
    source = await transpile(fileName, await readFile(fileName, "utf8"));
    try {
      await mkdir(cacheDir, { recursive: true });
      await writeFile(cached, source);
    } catch {
      // A read-only checkout still works, just slower.
    }
  }
  return { format: "module", source, shortCircuit: true };
}
