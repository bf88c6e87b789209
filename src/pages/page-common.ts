/**
 * Browser code both pages share (/docs and /ui), spliced into each page's script: the
 * session keys, the one element builder (text only through `textContent`, so nothing from
 * the server is ever parsed as HTML), the token getter, and the `#token=T` fragment rule
 * (stored for this tab, then removed from the address bar).
 */
export const PAGE_COMMON = String.raw`
  var TOKEN_KEY = "shiftlock.token";
  var NS_KEY = "shiftlock.namespace";

  function el(tag, attrs, children) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) {
      if (k === "text") node.textContent = attrs[k];
      else node.setAttribute(k, attrs[k]);
    });
    (children || []).forEach(function (c) {
      if (c !== null && c !== undefined) node.appendChild(typeof c === "string" ? document.createTextNode(c) : c);
    });
    return node;
  }

  function token() { return sessionStorage.getItem(TOKEN_KEY) || ""; }

  function takeTokenFromFragment() {
    var hash = /^#token=(.+)$/.exec(location.hash);
    if (!hash) return;
    sessionStorage.setItem(TOKEN_KEY, decodeURIComponent(hash[1]));
    history.replaceState(null, "", location.pathname + location.search);
  }
`;
