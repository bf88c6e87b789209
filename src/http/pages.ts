/**
 * The pages the Worker serves itself (docs/protocol.md#pages): `GET /docs`, the interactive API
 * reference, and `GET /ui`, the live dashboard, each with its script and the stylesheet.
 * They need no token to load; every API call they make carries the token the user enters.
 * `GET /` redirects to `/ui`; `/ui/` and `/docs/` are the pages themselves.
 *
 * Guarantees:
 * - Everything is served from the Worker's own bundle (`#pages`, built by
 *   src/serve/build-pages.ts from src/pages): no CDN, no static-assets binding, so the page
 *   works offline against a local server and wherever the Worker runs (`shiftlock/testing`
 *   too), and an API request passes through no asset router first.
 * - A Content-Security-Policy allows only same-origin scripts, styles and connections, no
 *   inline code, no framing; the page cannot send the token anywhere but this origin.
 *
 * Does not: take part in the API (these are not `/v1` routes and are not in `/openapi.json`).
 */
import type { Hono } from "hono";
import files from "#pages";
import { ShiftlockError } from "../protocol/errors.ts";
import type { AppEnv } from "./app-env.ts";

export const PAGE_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; " +
  "base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

const HTML = "text/html; charset=utf-8";
const SCRIPT = "text/javascript; charset=utf-8";
const STYLE = "text/css; charset=utf-8";

/** Served path → the built file (a key of `#pages`) and its type. */
const PAGES: Record<string, { file: string; type: string }> = {};
for (const page of ["docs", "ui"]) {
  PAGES[`/${page}`] = { file: `/${page}/index.html`, type: HTML };
  PAGES[`/${page}/`] = { file: `/${page}/index.html`, type: HTML };
  PAGES[`/${page}/app.js`] = { file: `/${page}/app.js`, type: SCRIPT };
  PAGES[`/${page}/app.css`] = { file: `/${page}/app.css`, type: STYLE };
}

/** The paths of the pages (and `/`, their redirect): served here, deliberately not in `/openapi.json`. */
export const PAGE_PATHS: readonly string[] = ["/", ...Object.keys(PAGES)];

export function mountPages(app: Hono<AppEnv>): void {
  app.get("/", (c) => c.redirect("/ui", 302));
  for (const [path, page] of Object.entries(PAGES)) {
    app.get(path, () => {
      const body = files[page.file];
      // Only a bundle built without its pages lacks one (build-pages writes every file).
      if (body === undefined)
        throw new ShiftlockError("not_found", `${path}: the pages were not built into this Worker`);
      return new Response(body, {
        headers: {
          "Content-Type": page.type,
          "Content-Security-Policy": PAGE_CSP,
          "X-Content-Type-Options": "nosniff",
          "Referrer-Policy": "no-referrer",
          "Cache-Control": "no-cache",
        },
      });
    });
  }
}
