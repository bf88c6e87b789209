/**
 * `npm start`: serve the API locally (see local-server.ts).
 *
 *   node --import tsx src/serve/main.ts
 *     [--host 127.0.0.1] [--port 8787] [--persist-to .wrangler/state] [--bundle dist]
 *     [--inspector-port P] [--listing-index on|off]
 *
 * `--inspector-port` opens workerd's V8 inspector on 127.0.0.1:P (profiling, debugging:
 * bench/profile.mjs) and prints `inspector on http://127.0.0.1:P`; off by default.
 * Prints `shiftlock listening on <url>` once it serves, then the addresses of the API (with
 * its dev token), the dashboard (`/ui`) and the API reference (`/docs`). SIGINT and SIGTERM
 * close the front and workerd and exit 0; a second signal exits at once. Unknown options are
 * errors (exit 2). A port already in use (another `npm start`) prints one line saying so and
 * what to do, and exits 1 without starting workerd. `--listing-index off` sets `LISTING_INDEX = "off"` (no outbox, no index
 * feeding: the bench's comparison, docs/listing.md); on by default, as deployed.
 * `--listing-shards N` sets `LISTING_SHARDS` (docs/listing.md); `--lease-notice-ttls N` sets
 * `LEASE_NOTICE_TTLS` (docs/generations.md "When a lapse is noticed"); `--object-meter on` sets
 * `OBJECT_METER = "on"`: one JSON line per Durable Object call (the scale model's counts,
 * docs/scale.md).
 */
import { parseArgs } from "node:util";
import { PortInUseError, startLocalServer } from "./local-server.ts";
import { MAX_LEASE_NOTICE_TTLS, leaseNoticeTtls } from "../core/generation-lease.ts";

function usage(message: string): never {
  console.error(`shiftlock serve: ${message}`);
  console.error(
    "usage: serve [--host 127.0.0.1] [--port 8787] [--persist-to .wrangler/state] [--bundle dist] [--inspector-port P] [--listing-index on|off] [--listing-shards N] [--lease-notice-ttls N] [--object-meter on|off]",
  );
  process.exit(2);
}

let values: {
  host: string;
  port: string;
  "persist-to": string;
  bundle: string;
  "inspector-port"?: string;
  "listing-index": string;
  "listing-shards"?: string;
  "lease-notice-ttls"?: string;
  "object-meter": string;
};
try {
  ({ values } = parseArgs({
    options: {
      host: { type: "string", default: "127.0.0.1" },
      port: { type: "string", default: "8787" },
      "persist-to": { type: "string", default: ".wrangler/state" },
      bundle: { type: "string", default: "dist" },
      "inspector-port": { type: "string" },
      "listing-index": { type: "string", default: "on" },
      "listing-shards": { type: "string" },
      "lease-notice-ttls": { type: "string" },
      "object-meter": { type: "string", default: "off" },
    },
    strict: true,
    allowPositionals: false,
  }));
} catch (err) {
  usage(err instanceof Error ? err.message : String(err));
}
const port = Number(values.port);
if (!Number.isInteger(port) || port < 0 || port > 65535) usage("--port must be an integer 0..65535");
const inspectorPort = values["inspector-port"] === undefined ? undefined : Number(values["inspector-port"]);
if (inspectorPort !== undefined && (!Number.isInteger(inspectorPort) || inspectorPort < 0 || inspectorPort > 65535)) {
  usage("--inspector-port must be an integer 0..65535");
}

if (values["listing-index"] !== "on" && values["listing-index"] !== "off") usage("--listing-index must be on or off");
const objectMeter = values["object-meter"];
if (objectMeter !== "on" && objectMeter !== "off") usage("--object-meter must be on or off");
const shards = values["listing-shards"];
if (shards !== undefined && !/^[1-9][0-9]{0,3}$/.test(shards)) usage("--listing-shards must be an integer 1..1024");
const noticeTtls = values["lease-notice-ttls"];
if (noticeTtls !== undefined && String(leaseNoticeTtls(noticeTtls)) !== noticeTtls) {
  usage(`--lease-notice-ttls must be an integer 0..${MAX_LEASE_NOTICE_TTLS}`);
}

const server = await startLocalServer({
  host: values.host,
  port,
  persistTo: values["persist-to"],
  bundleDir: values.bundle,
  ...(inspectorPort === undefined ? {} : { inspectorPort }),
  bindings: {
    LISTING_INDEX: values["listing-index"],
    OBJECT_METER: objectMeter,
    ...(shards === undefined ? {} : { LISTING_SHARDS: shards }),
    ...(noticeTtls === undefined ? {} : { LEASE_NOTICE_TTLS: noticeTtls }),
  },
}).catch((err: unknown) => {
  if (!(err instanceof PortInUseError)) throw err;
  console.error(
    `shiftlock serve: port ${err.port} on ${err.host} is in use (another npm start?): stop that server, or serve on another port with npm start -- --port ${err.port + 1}`,
  );
  process.exit(1);
});
process.stdout.write(
  [
    `shiftlock listening on ${server.url} (state in ${values["persist-to"]})`,
    `  API        ${server.url}  (Authorization: Bearer dev-token; dev-admin-token may also evict)`,
    `  dashboard  ${server.url}/ui`,
    `  API docs   ${server.url}/docs`,
    "",
  ].join("\n"),
);
if (server.inspectorUrl !== undefined) process.stdout.write(`inspector on ${server.inspectorUrl}\n`);

let closing = false;
const shutdown = (): void => {
  if (closing) process.exit(1);
  closing = true;
  server.close().then(
    () => process.exit(0),
    (err: unknown) => {
      console.error("shiftlock serve: shutdown failed", err);
      process.exit(1);
    },
  );
};
process.on("SIGINT", shutdown);
process.on("SIGTERM", shutdown);
