/**
 * Diagnostic server for `--server=direct`: the same `startLocalServer()` that `npm start`
 * runs (src/serve/local-server.ts: the bundle, wrangler.toml read by wrangler's own reader,
 * the dev-only token, SQLite-backed objects persisted under `--persist-to`), but it prints
 * `directUrl` — workerd's own socket, with no Node front in the way — so a benchmark can
 * show what the front costs. Its front still listens (on a spare port) and stays idle.
 *
 *   node --import tsx bench/direct-server.ts --persist-to DIR --bundle DIR [--listing-index on|off]
 *
 * Prints `READY <url>` once it serves. SIGINT/SIGTERM close it and exit 0.
 * Not what clients of `npm start` reach: figures taken through it are labelled as such.
 * It does not build the bundle (bench/server.mjs does).
 */
import { startLocalServer } from "../src/serve/local-server.ts";
import { parseOrExit } from "../src/cli/options.mjs";
import { DIRECT_SERVER_USAGE, parseDirectServerArgs } from "./options.mjs";

const options = parseOrExit("direct-server", DIRECT_SERVER_USAGE, () => parseDirectServerArgs(process.argv.slice(2)));
const server = await startLocalServer({
  host: "127.0.0.1",
  port: 0,
  persistTo: options.persistTo,
  bundleDir: options.bundle,
  // As `npm start --listing-index` sets it (src/serve/main.ts).
  bindings: { LISTING_INDEX: options.listingIndex },
});
process.stdout.write(`READY ${server.directUrl}\n`);

let closing = false;
const shutdown = (): void => {
  if (closing) process.exit(1);
  closing = true;
  server.close().then(
    () => process.exit(0),
    () => process.exit(1),
  );
};
process.on("SIGINT", shutdown);
process.on("SIGTERM", shutdown);
