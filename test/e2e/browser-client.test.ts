// The client in a real browser (headless Chromium, test/e2e/browser.ts): a page served from
// another origin than the API loads the client bundled for browsers (esbuild), acquires a
// claim over CORS (SPEC §6; `npm start` allows every origin), watches it over a WebSocket
// authenticated with the `shiftlock.bearer.<token>` subprotocol (all a browser can send),
// releases it and sees the `released` event. The test reads the page's results through
// page evaluation.
import { build } from "esbuild";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, expect, inject, it } from "vitest";
import type * as client from "../../src/client/index.ts";
import { describeBrowser, launchChromium, serveStatic, type StaticServer } from "./browser.ts";

/** What the page's globals hold (the test's tsconfig has no DOM types). */
interface PageGlobals {
  shiftlock: typeof client;
  shiftlockReady?: boolean;
  /** `protocol` of every WebSocket the page opened, once open: what the server echoed. */
  openedProtocols: string[];
  location: { origin: string };
}

// Runs in the page before its scripts: records each WebSocket's negotiated subprotocol.
const RECORD_SOCKETS = `
  window.openedProtocols = [];
  const Native = window.WebSocket;
  window.WebSocket = class extends Native {
    constructor(url, protocols) {
      super(url, protocols);
      this.addEventListener("open", () => window.openedProtocols.push(this.protocol));
    }
  };
`;

const INDEX_HTML = `<!doctype html>
<meta charset="utf-8">
<title>shiftlock client in a browser</title>
<script type="module">
  import * as shiftlock from "/client.js";
  window.shiftlock = shiftlock;
  window.shiftlockReady = true;
</script>`;

let browser: Browser | undefined;
let pages: StaticServer | undefined;
let page: Page;

describeBrowser("the client in headless Chromium, from another origin", () => {
  beforeAll(async () => {
    const bundle = await build({
      entryPoints: ["src/client/index.ts"],
      bundle: true,
      format: "esm",
      platform: "browser",
      target: "es2022",
      write: false,
      logLevel: "silent",
    });
    const clientJs = bundle.outputFiles[0]?.text ?? "";
    pages = await serveStatic({
      "/": { type: "text/html; charset=utf-8", body: INDEX_HTML },
      "/client.js": { type: "text/javascript; charset=utf-8", body: clientJs },
    });
    browser = await launchChromium();
    page = await browser.newPage();
    await page.addInitScript(RECORD_SOCKETS);
    await page.goto(`${pages.url}/`);
    await page.waitForFunction(() => (globalThis as unknown as PageGlobals).shiftlockReady === true);
  });

  afterAll(async () => {
    await browser?.close();
    await pages?.close();
  });

  it("acquires, watches over a subprotocol-authenticated WebSocket, releases and sees `released`", async () => {
    const apiUrl = inject("serverUrl");
    const args = { apiUrl, namespace: `e2e-browser-${process.pid}`, claim: `browser-${crypto.randomUUID()}` };
    const result = await page.evaluate(async ({ apiUrl, namespace, claim }) => {
      const g = globalThis as unknown as PageGlobals;
      const claims = new g.shiftlock.HttpClaimsBackend({ baseUrl: apiUrl, token: "dev-token", namespace });
      const generationId = "browser-generation";
      const acquired = await claims.acquireClaim({ claimName: claim, generationId, ttlMs: 15_000 });
      const watch = claims.watchClaim(claim);
      const items = watch[Symbol.asyncIterator]();
      const seen: string[] = [];
      const first = await items.next();
      if (first.done !== true) seen.push(`${first.value.type}:${first.value.claim?.phase ?? "absent"}`);
      await claims.releaseClaim({ claimName: claim, generationId, token: acquired.fencingToken });
      let releasedBy = "";
      for (;;) {
        const next = await items.next();
        if (next.done === true) break;
        if (next.value.type !== "event") continue;
        seen.push(`${next.value.reason}:${next.value.claim.phase}`);
        if (next.value.reason === "released") {
          releasedBy = next.value.claim.previousOwner;
          break;
        }
      }
      watch.close();
      await claims.close();
      return {
        pageOrigin: g.location.origin,
        token: acquired.fencingToken.toString(),
        seen,
        releasedBy,
        protocols: g.openedProtocols,
      };
    }, args);
    expect(result.pageOrigin).not.toBe(new URL(apiUrl).origin);
    expect(result.token).toBe("1");
    expect(result.seen).toEqual(["snapshot:owned", "released:unowned"]);
    expect(result.releasedBy).toBe("browser-generation");
    expect(result.protocols).toEqual(["shiftlock.bearer.dev-token"]);
  });
});
