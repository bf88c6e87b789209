/**
 * One claim round trip in a real browser page, for any build of the client: a page served
 * from another origin than the API loads `clientJs` (an ESM bundle exporting
 * `HttpClaimsBackend`), acquires a claim over CORS, watches it over a WebSocket authenticated
 * by a watch ticket (what the client does in browsers), releases it and waits for `released`.
 * Used with the bundle built from the sources (browser-client.test.ts) and with the bundle
 * built from the installed tarball (package.test.ts).
 */
import type { Browser } from "playwright-core";
import type * as client from "../../src/client/index.ts";
import { serveStatic } from "./browser.ts";

/** What the page's globals hold (the test's tsconfig has no DOM types). */
interface PageGlobals {
  shiftlock: Pick<typeof client, "HttpClaimsBackend">;
  shiftlockReady?: boolean;
  /** `protocol` of every WebSocket the page opened, once open: what the server echoed. */
  openedProtocols: string[];
  /** `url` of every WebSocket the page opened. */
  openedUrls: string[];
  location: { origin: string };
}

// Runs in the page before its scripts: records each WebSocket's negotiated subprotocol.
const RECORD_SOCKETS = `
  window.openedProtocols = [];
  window.openedUrls = [];
  const Native = window.WebSocket;
  window.WebSocket = class extends Native {
    constructor(url, protocols) {
      super(url, protocols);
      window.openedUrls.push(String(url));
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

export interface RoundTrip {
  /** The page's origin (not the API's). */
  pageOrigin: string;
  /** The fencing token the acquire returned. */
  token: string;
  /** `snapshot:<phase>` then `<reason>:<phase>` of each event, in order. */
  seen: string[];
  /** `previousOwner` of the `released` event. */
  releasedBy: string;
  /** The subprotocol each opened WebSocket negotiated. */
  protocols: string[];
  /** The URL of each WebSocket the page opened. */
  urls: string[];
}

export async function claimRoundTripInBrowser(
  browser: Browser,
  clientJs: string,
  args: { apiUrl: string; namespace: string; claim: string },
): Promise<RoundTrip> {
  const pages = await serveStatic({
    "/": { type: "text/html; charset=utf-8", body: INDEX_HTML },
    "/client.js": { type: "text/javascript; charset=utf-8", body: clientJs },
  });
  const page = await browser.newPage();
  try {
    await page.addInitScript(RECORD_SOCKETS);
    await page.goto(`${pages.url}/`);
    await page.waitForFunction(() => (globalThis as unknown as PageGlobals).shiftlockReady === true);
    return await page.evaluate(async ({ apiUrl, namespace, claim }) => {
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
        urls: g.openedUrls,
      };
    }, args);
  } finally {
    await page.close();
    await pages.close();
  }
}
