/**
 * The pages the Worker serves itself (docs/protocol.md#pages): `GET /docs`, the interactive API
 * reference, and `GET /ui`, the live dashboard, each with its script and the stylesheet.
 * They need no token to load; every API call they make carries the token the user enters.
 *
 * Guarantees:
 * - Everything is served from this Worker (no CDN): the page works offline against a local
 *   server.
 * - A Content-Security-Policy allows only same-origin scripts, styles and connections, no
 *   inline code, no framing; the page cannot send the token anywhere but this origin.
 *
 * Does not: take part in the API (these are not `/v1` routes and are not in `/openapi.json`).
 */
import type { Hono } from "hono";
import { DOCS_HTML } from "../pages/docs-html.ts";
import { DOCS_SCRIPT } from "../pages/docs-script.ts";
import { PAGE_STYLE } from "../pages/page-style.ts";
import { UI_HTML } from "../pages/ui-html.ts";
import { UI_SCRIPT } from "../pages/ui-script.ts";
import type { AppEnv } from "./app-env.ts";

export const PAGE_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; " +
  "base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

const PAGES: Record<string, { type: string; body: string }> = {
  "/docs": { type: "text/html; charset=utf-8", body: DOCS_HTML },
  "/docs/app.js": { type: "text/javascript; charset=utf-8", body: DOCS_SCRIPT },
  "/docs/app.css": { type: "text/css; charset=utf-8", body: PAGE_STYLE },
  "/ui": { type: "text/html; charset=utf-8", body: UI_HTML },
  "/ui/app.js": { type: "text/javascript; charset=utf-8", body: UI_SCRIPT },
  "/ui/app.css": { type: "text/css; charset=utf-8", body: PAGE_STYLE },
};

/** The paths of the pages: served here, deliberately not in `/openapi.json`. */
export const PAGE_PATHS: readonly string[] = Object.keys(PAGES);

export function mountPages(app: Hono<AppEnv>): void {
  for (const [path, page] of Object.entries(PAGES)) {
    app.get(
      path,
      () =>
        new Response(page.body, {
          headers: {
            "Content-Type": page.type,
            "Content-Security-Policy": PAGE_CSP,
            "X-Content-Type-Options": "nosniff",
            "Referrer-Policy": "no-referrer",
            "Cache-Control": "no-cache",
          },
        }),
    );
  }
}
