// The client in a real browser (headless Chromium, test/e2e/browser.ts), bundled from the
// sources for browsers (esbuild): from a page on another origin than the API it acquires a
// claim over CORS (docs/protocol.md#browsers-and-cors; `npm start` allows every origin), watches it over a WebSocket
// authenticated with the `shiftlock.bearer.<token>` subprotocol (all a browser can send),
// releases it and sees the `released` event (test/e2e/browser-claim-roundtrip.ts). The same
// round trip runs on the bundle built from the installed tarball in package.test.ts.
import { build } from "esbuild";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, expect, inject, it } from "vitest";
import { claimRoundTripInBrowser } from "./browser-claim-roundtrip.ts";
import { describeBrowser, launchChromium } from "./browser.ts";

let browser: Browser | undefined;
let clientJs = "";

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
    clientJs = bundle.outputFiles[0]?.text ?? "";
    browser = await launchChromium();
  });

  afterAll(async () => {
    await browser?.close();
  });

  it("acquires, watches over a ticket-authenticated WebSocket, releases and sees `released`", async () => {
    const apiUrl = inject("serverUrl");
    const args = { apiUrl, namespace: `e2e-browser-${process.pid}`, claim: `browser-${crypto.randomUUID()}` };
    const result = await claimRoundTripInBrowser(browser!, clientJs, args);
    expect(result.pageOrigin).not.toBe(new URL(apiUrl).origin);
    expect(result.token).toBe("1");
    expect(result.seen).toEqual(["snapshot:owned", "released:unowned"]);
    expect(result.releasedBy).toBe("browser-generation");
    // A watch ticket, not the token, opened the socket: no subprotocol, no token in its URL.
    expect(result.protocols).toEqual([""]);
    expect(result.urls).toHaveLength(1);
    expect(result.urls[0]).toContain("ticket=");
    expect(result.urls[0]).not.toContain("dev-token");
  });
});
