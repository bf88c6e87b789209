/* eslint-disable @typescript-eslint/no-unsafe-assignment, @typescript-eslint/no-unsafe-member-access --
   Miniflare's and wrangler's typings reach workers-types the type-aware linter cannot resolve
   (tsc resolves them); see readWranglerConfig. Floating-promise rules still apply here. */
/**
 * The local server behind `npm start`: the Worker bundle served by workerd through
 * Miniflare's API (no `wrangler dev` proxy), with the Node front (front.ts) on the public
 * port.
 *
 * Guarantees:
 * - The same bindings, Durable Object classes (SQLite-backed), compatibility date and flags
 *   as a deployment: they come from wrangler.toml through wrangler's own config reader
 *   (`unstable_readConfig` + `unstable_getMiniflareWorkerOptions`), never from a regex.
 * - State persists where `wrangler dev --persist-to DIR` keeps it (`DIR/v3`, the worker
 *   named as in wrangler.toml), so `npm start` and `npm run dev` share their objects, and
 *   pending alarms survive a restart (overdue ones run after it).
 * - `AUTH_TOKENS` is the dev-only list ({@link DEV_AUTH_TOKENS}: `dev-token`, write, and
 *   `dev-admin-token`, admin, every namespace); a deployment never has it (wrangler.toml does not, see docs/auth.md).
 *   `CORS_ORIGINS` is `*`, so a page on any local origin can call it (docs/protocol.md#browsers-and-cors).
 * - `close()` stops the front, then workerd; nothing keeps running.
 * - A port another process listens on rejects with {@link PortInUseError} before workerd
 *   starts (a second server on the same state directory would run its pending alarms too);
 *   a port taken in the moment between that check and the front's listen rejects the same
 *   way, after workerd was stopped again.
 *
 * Does not: bundle the Worker (the caller passes `wrangler deploy --dry-run` output) or
 * reload on change (`npm run dev` does).
 */
import { createServer } from "node:net";
import { join, resolve } from "node:path";
import { Miniflare } from "miniflare";
import type { WorkerOptions } from "miniflare";
import * as wrangler from "wrangler";
import { startFront } from "./front.ts";

/**
 * The dev-only token list of `npm start` and `npm run dev` (docs/protocol.md#authentication-and-roles):
 * `dev-token` (write) and `dev-admin-token` (admin), every namespace.
 */
export const DEV_AUTH_TOKENS = JSON.stringify([
  { token: "dev-token", role: "write", namespaces: "*", name: "dev" },
  { token: "dev-admin-token", role: "admin", namespaces: "*", name: "dev-admin" },
]);

export interface LocalServerOptions {
  host: string;
  port: number;
  /** Where state lives, as `wrangler dev --persist-to` (default `.wrangler/state`). */
  persistTo: string;
  /** Directory holding the bundle's `index.js` (`wrangler deploy --dry-run --outdir`). */
  bundleDir: string;
  /** wrangler.toml to read (default `wrangler.toml`). */
  configPath?: string;
  /** Extra or replaced plain-text bindings (vars). */
  bindings?: Record<string, string>;
  /**
   * Open workerd's V8 inspector (Chrome DevTools Protocol) on this loopback port, as
   * `wrangler dev --inspector-port` does; 0 picks a free one. Default: no inspector.
   */
  inspectorPort?: number;
}

export interface LocalServer {
  /** The public URL, e.g. http://127.0.0.1:8787. */
  url: string;
  /** workerd's own socket (diagnostics and benchmarks: the Worker without the front). */
  directUrl: string;
  /** The inspector's base URL (`http://127.0.0.1:P`, `/json` lists targets) when one was asked for. */
  inspectorUrl?: string;
  close(): Promise<void>;
}

/** The public port is taken (`EADDRINUSE`): most likely another `npm start`. */
export class PortInUseError extends Error {
  constructor(
    readonly host: string,
    readonly port: number,
  ) {
    super(`${host}:${port} is in use`);
    this.name = "PortInUseError";
  }
}

/** Start workerd and the front; resolves once both serve. */
export async function startLocalServer(options: LocalServerOptions): Promise<LocalServer> {
  await ensurePortFree(options.host, options.port);
  const { name, workerOptions } = readWranglerConfig(options.configPath ?? "wrangler.toml");
  const bundleDir = resolve(options.bundleDir);
  const mf = new Miniflare({
    ...workerOptions,
    name,
    modules: true,
    scriptPath: join(bundleDir, "index.js"),
    modulesRoot: bundleDir,
    bindings: { ...workerOptions.bindings, AUTH_TOKENS: DEV_AUTH_TOKENS, CORS_ORIGINS: "*", ...options.bindings },
    defaultPersistRoot: join(resolve(options.persistTo), "v3"),
    durableObjectsPersist: true,
    // Miniflare's own entry listens on a spare port; clients come through the front.
    host: "127.0.0.1",
    port: 0,
    unsafeDirectSockets: [{ host: "127.0.0.1", port: 0 }],
    ...(options.inspectorPort === undefined
      ? {}
      : { inspectorPort: options.inspectorPort, inspectorHost: "127.0.0.1" }),
  });
  try {
    await mf.ready;
    const direct = await mf.unsafeGetDirectURL();
    const front = await startFront({ host: options.host, port: options.port, upstream: direct });
    const inspector = options.inspectorPort === undefined ? undefined : await mf.getInspectorURL();
    return {
      url: front.url,
      directUrl: direct.origin,
      ...(inspector === undefined ? {} : { inspectorUrl: `http://${inspector.host}` }),
      async close() {
        await front.close();
        await mf.dispose();
      },
    };
  } catch (err) {
    await mf.dispose();
    throw isAddressInUse(err) ? new PortInUseError(options.host, options.port) : err;
  }
}

function isAddressInUse(err: unknown): boolean {
  return (err as NodeJS.ErrnoException | undefined)?.code === "EADDRINUSE";
}

/** Listen on the port for a moment: rejects with PortInUseError when someone else does. Port 0 is always free. */
async function ensurePortFree(host: string, port: number): Promise<void> {
  if (port === 0) return;
  const probe = createServer();
  await new Promise<void>((done, fail) => {
    probe.once("error", (err) => fail(isAddressInUse(err) ? new PortInUseError(host, port) : err));
    probe.listen(port, host, () => probe.close(() => done()));
  });
}

/**
 * The Worker's name and Miniflare options from wrangler.toml, through wrangler's own reader.
 * Typed here: wrangler's and Miniflare's declarations reach types (workers-types) that the
 * type-aware linter cannot resolve, hence the file-level unsafe-* exemption above.
 */
export function readWranglerConfig(configPath: string): { name: string; workerOptions: WorkerOptions } {
  const config: { name?: string } = wrangler.unstable_readConfig({ config: configPath });
  const { workerOptions }: { workerOptions: WorkerOptions } = wrangler.unstable_getMiniflareWorkerOptions(
    config as Parameters<typeof wrangler.unstable_getMiniflareWorkerOptions>[0],
  );
  return { name: config.name ?? "shiftlock", workerOptions };
}
