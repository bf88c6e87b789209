/**
 * `GET /docs` (served as `/docs/app.js`): an interactive reference rendered in the browser
 * from `/openapi.json`, the document generated from the route declarations; bundled from
 * TypeScript by src/serve/build-pages.ts.
 *
 * Guarantees:
 * - Everything it shows comes from `/openapi.json` of the same server: no CDN, no other
 *   origin, works offline. Text from the document is inserted as text, never as HTML.
 * - The title names the package version the server runs (`info.version`).
 * - The filter shows the operations whose method, path, summary or id contain the text, and
 *   only the sections that still hold one ("No operation matches" when none does).
 * - Every "Try it" form's `ns` path parameter holds the namespace box's value (`demo` until
 *   the user types another, which this tab keeps).
 * - The token the user enters is kept in `sessionStorage` (this tab only) and sent only to
 *   this origin (operation-view.ts); `/docs#token=T` stores T and removes it from the address
 *   bar.
 *
 * Does not: open WebSockets (watch routes show their message schemas instead).
 */
import { NS_KEY, TOKEN_KEY, byId, el, storedNamespace, takeTokenFromFragment, token } from "../dom.ts";
import type { OpenApiDocument } from "./openapi.ts";
import { operationView } from "./operation-view.ts";

/** The namespace box's value until the user types another (this tab keeps theirs). */
const DEFAULT_NAMESPACE = "demo";

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

/** Show the operations that match `text`, and only the sections that still hold one. */
function filter(text: string): void {
  const needle = text.trim().toLowerCase();
  let shown = 0;
  for (const section of document.querySelectorAll<HTMLElement>("#operations > section")) {
    let left = 0;
    for (const d of section.querySelectorAll<HTMLElement>("details.op")) {
      d.hidden = needle !== "" && !(d.getAttribute("data-search") ?? "").includes(needle);
      if (!d.hidden) left += 1;
    }
    section.hidden = left === 0;
    shown += left;
  }
  const none = byId("no-match");
  none.hidden = shown > 0;
  none.textContent = shown > 0 ? "" : `No operation matches "${text.trim()}".`;
}

/** Every "Try it" form's `ns` parameter takes the page's namespace box. */
function fillNamespace(): void {
  for (const input of document.querySelectorAll<HTMLInputElement>("input[name=ns]")) input.value = nsInput.value;
}

takeTokenFromFragment();
const tokenInput = byId<HTMLInputElement>("token");
const nsInput = byId<HTMLInputElement>("namespace");
tokenInput.value = token();
// A real value, not a placeholder: "Try it" sends what the box holds (README's tour uses `demo`).
nsInput.value = storedNamespace() || DEFAULT_NAMESPACE;
tokenInput.addEventListener("input", () => sessionStorage.setItem(TOKEN_KEY, tokenInput.value));
nsInput.addEventListener("input", () => {
  sessionStorage.setItem(NS_KEY, nsInput.value);
  fillNamespace();
});
byId<HTMLInputElement>("filter").addEventListener("input", (e) => filter((e.target as HTMLInputElement).value));

fetch("/openapi.json")
  .then(async (res) => {
    render((await res.json()) as OpenApiDocument);
    fillNamespace();
    filter(byId<HTMLInputElement>("filter").value); // what was typed while it loaded
  })
  .catch((err: unknown) => {
    byId("operations").textContent = `could not load /openapi.json: ${String(err)}`;
  });
