/**
 * Headless Chromium for e2e tests, shared by every test that needs a real browser (the
 * client in a page from another origin, the /ui dashboard): Debian's `chromium` package,
 * driven by `playwright-core`, which never downloads a browser.
 *
 * API:
 * - `CHROMIUM_PATH` — the executable: `$SHIFTLOCK_CHROMIUM`, else `/usr/bin/chromium`
 *   (`.ci/run` installs it with apt-get).
 * - `chromiumMissing()` — why Chromium cannot run here (a sentence), or undefined.
 * - `describeBrowser(name, fn)` — `describe` for browser tests: without Chromium it is
 *   skipped with that sentence printed, except in CI (`CI=true`), where it runs and
 *   `launchChromium()` fails, so a CI without a browser is red, not silently green.
 * - `launchChromium()` — a headless `Browser` (close it in `afterAll`). Flags: headless,
 *   no sandbox (CI runs as root), no GPU, no QUIC, no first-run, background networking,
 *   component updates or sync: the browser only talks to the pages a test opens.
 * - `serveStatic(files)` — a throw-away HTTP server on 127.0.0.1 and a free port serving
 *   `files` (path → { type, body }), i.e. a page origin different from the API's; returns
 *   `{ url, close() }`.
 *
 * Does not: install anything, or share one browser between test files (each launches its
 * own: ≈ 1 s, and no state leaks between files).
 */
import { existsSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { chromium, type Browser } from "playwright-core";
import { describe } from "vitest";

export const CHROMIUM_PATH = process.env["SHIFTLOCK_CHROMIUM"] ?? "/usr/bin/chromium";

const CHROMIUM_ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

/** Why Chromium cannot run here, or undefined when it can. */
export function chromiumMissing(): string | undefined {
  if (existsSync(CHROMIUM_PATH)) return undefined;
  return `Chromium is not installed at ${CHROMIUM_PATH} (apt-get install -y chromium, or set SHIFTLOCK_CHROMIUM)`;
}

/** `describe` that needs Chromium: skipped without it outside CI, failing without it in CI. */
export function describeBrowser(name: string, fn: () => void): void {
  const missing = chromiumMissing();
  if (missing !== undefined && process.env["CI"] !== "true") {
    console.warn(`skipping "${name}": ${missing}`);
    describe.skip(name, fn);
    return;
  }
  describe(name, fn);
}

/** A headless Chromium from {@link CHROMIUM_PATH}; throws with the reason when it is missing. */
export async function launchChromium(): Promise<Browser> {
  const missing = chromiumMissing();
  if (missing !== undefined) throw new Error(missing);
  return chromium.launch({ executablePath: CHROMIUM_PATH, headless: true, args: CHROMIUM_ARGS });
}

export interface StaticFile {
  /** The `content-type` header. */
  type: string;
  body: string;
}

export interface StaticServer {
  /** `http://127.0.0.1:<port>`: its own origin. */
  url: string;
  close(): Promise<void>;
}

/** Serve `files` (by exact path, e.g. `/index.html`) on a free port; anything else is 404. */
export async function serveStatic(files: Record<string, StaticFile>): Promise<StaticServer> {
  const server = createServer((req, res) => {
    const file = files[new URL(req.url ?? "/", "http://x").pathname];
    if (file === undefined) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { "content-type": file.type, "cache-control": "no-store" }).end(file.body);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
