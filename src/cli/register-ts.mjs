// `node --import ./src/cli/register-ts.mjs file.ts` runs a TypeScript entry on Node 20
// (see ts-hooks.mjs). Used by `npm run demo`.
import { register } from "node:module";

register("./ts-hooks.mjs", import.meta.url);
