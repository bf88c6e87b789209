/**
 * `node --import ./src/cli/register-ts.mjs file.ts` runs a TypeScript entry on Node 20:
 * it registers the hooks of ts-hooks.mjs (which say what they do and do not guarantee).
 * Used by `npm run demo`.
 */
import { register } from "node:module";

register("./ts-hooks.mjs", import.meta.url);
