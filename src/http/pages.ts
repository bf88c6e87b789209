/**
 * The pages the Worker serves itself (docs/protocol.md#pages): `GET /docs`, the interactive API
 * reference, and `GET /ui`, the live dashboard, each with its script and the stylesheet.
 * They need no token to load; every API call they make carries the token the user enters.
 * `GET /` redirects to `/ui`; `/ui/` and `/docs/` are the pages themselves.
 *
 * Guarantees:
 * - Everything is served from this Worker's static assets (the `ASSETS` binding, built by
 *   src/serve/build-pages.ts from src/pages): no CDN, the page works offline against a local
 *   server.
 * - A Content-Security-Policy allows only same-origin scripts, styles and connections, no
 *   inline code, no framing; the page cannot send the token anywhere but this origin.
 *
 * Does not: take part in the API (these are not `/v1` routes and are not in `/openapi.json`),
 * or serve pages where the assets were not deployed with the Worker (no `ASSETS` binding, as
 * in `shiftlock/testing`): those paths are 404 `not_found` there.
 */
import type { Hono } from "hono";
import { ShiftlockError } from "../protocol/errors.ts";
import type { AppEnv } from "./app-env.ts";

export const PAGE_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; " +
  "base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

const HTML = "text/html; charset=utf-8";
const SCRIPT = "text/javascript; charset=utf-8";
const STYLE = "text/css; charset=utf-8";

/** Served path → the asset file (src/serve/build-pages.ts's layout) and its type. */
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
    app.get(path, async (c) => {
      const assets = (c.env as Partial<Env>).ASSETS;
      const asset = assets === undefined ? undefined : await assets.fetch(new URL(page.file, c.req.url));
      if (asset === undefined || !asset.ok) {
        throw new ShiftlockError("not_found", `${path}: the pages were not deployed with this Worker`);
      }
      return new Response(asset.body, {
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
