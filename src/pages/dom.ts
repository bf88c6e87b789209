/**
 * What both pages (/docs and /ui) share in the browser: the session keys, the one element
 * builder, the token getter and the `#token=T` fragment rule.
 *
 * Guarantees: text reaches the page only through `textContent` (nothing from the server is
 * ever parsed as HTML); the token lives in `sessionStorage` (this tab only), and a token in
 * the fragment is stored, then removed from the address bar (fragments never reach a server).
 */

export const TOKEN_KEY = "shiftlock.token";
export const NS_KEY = "shiftlock.namespace";

type Child = Node | string | null | undefined;

/** `<tag attrs…>children</tag>`; the attribute `text` sets `textContent`. */
export function el(tag: string, attrs: Record<string, string> = {}, children: readonly Child[] = []): HTMLElement {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (key === "text") node.textContent = value;
    else node.setAttribute(key, value);
  }
  for (const child of children) {
    if (child !== null && child !== undefined) node.append(child);
  }
  return node;
}

/** The element with `id`; a page without it is a build mistake, reported loudly. */
export function byId<T extends HTMLElement = HTMLElement>(id: string): T {
  const node = document.getElementById(id);
  if (node === null) throw new Error(`page has no #${id}`);
  return node as T;
}

export function token(): string {
  return sessionStorage.getItem(TOKEN_KEY) ?? "";
}

export function storedNamespace(): string {
  return sessionStorage.getItem(NS_KEY) ?? "";
}

/** `#token=T` → stored for this tab, and gone from the address bar. */
export function takeTokenFromFragment(): void {
  const hash = /^#token=(.+)$/.exec(location.hash);
  if (hash === null) return;
  sessionStorage.setItem(TOKEN_KEY, decodeURIComponent(hash[1] ?? ""));
  history.replaceState(null, "", location.pathname + location.search);
}
