/**
 * `GET /docs` (served as `/docs/app.js`): an interactive reference rendered in the browser
 * from `/openapi.json`, the document generated from the route declarations; bundled from
 * TypeScript by src/serve/build-pages.ts.
 *
 * Guarantees:
 * - Everything it shows comes from `/openapi.json` of the same server: no CDN, no other
 *   origin, works offline. Text from the document is inserted as text, never as HTML.
 * - The title names the package version the server runs (`info.version`).
 * - The token the user enters is kept in `sessionStorage` (this tab only) and sent only to
 *   this origin (operation-view.ts); `/docs#token=T` stores T and removes it from the address
 *   bar.
 *
 * Does not: open WebSockets (watch routes show their message schemas instead).
 */
import { NS_KEY, TOKEN_KEY, byId, el, storedNamespace, takeTokenFromFragment, token } from "../dom.ts";
import type { OpenApiDocument } from "./openapi.ts";
import { operationView } from "./operation-view.ts";

function render(doc: OpenApiDocument): void {
  const title = `${doc.info.title} API ${doc.info.version}`;
  byId("title").textContent = title;
  document.title = `${title} reference`;
  byId("intro").textContent = doc.info.description ?? "";
  const main = byId("operations");
  main.textContent = "";
  const tags = (doc.tags ?? []).map((t) => t.name);
  const byTag = new Map<string, HTMLElement[]>();
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(item)) {
      const tag = op.tags?.[0] ?? "other";
      if (!tags.includes(tag)) tags.push(tag);
      byTag.set(tag, [...(byTag.get(tag) ?? []), operationView(doc, path, method, op)]);
    }
  }
  for (const tag of tags) {
    const ops = byTag.get(tag);
    if (ops === undefined) continue;
    const described = doc.tags?.find((t) => t.name === tag)?.description;
    main.append(
      el("section", { "aria-labelledby": `tag-${tag}` }, [
        el("h2", { id: `tag-${tag}`, text: tag }),
        described === undefined ? null : el("p", { text: described }),
        ...ops,
      ]),
    );
  }
  document.body.setAttribute("data-ready", "true");
}

function filter(text: string): void {
  const needle = text.trim().toLowerCase();
  for (const d of document.querySelectorAll<HTMLElement>("details.op")) {
    d.hidden = needle !== "" && !(d.getAttribute("data-search") ?? "").includes(needle);
  }
}

takeTokenFromFragment();
const tokenInput = byId<HTMLInputElement>("token");
const nsInput = byId<HTMLInputElement>("namespace");
tokenInput.value = token();
nsInput.value = storedNamespace();
tokenInput.addEventListener("input", () => sessionStorage.setItem(TOKEN_KEY, tokenInput.value));
nsInput.addEventListener("input", () => {
  sessionStorage.setItem(NS_KEY, nsInput.value);
  for (const input of document.querySelectorAll<HTMLInputElement>("input[name=ns]")) input.value = nsInput.value;
});
byId<HTMLInputElement>("filter").addEventListener("input", (e) => filter((e.target as HTMLInputElement).value));

fetch("/openapi.json")
  .then(async (res) => render((await res.json()) as OpenApiDocument))
  .catch((err: unknown) => {
    byId("operations").textContent = `could not load /openapi.json: ${String(err)}`;
  });
