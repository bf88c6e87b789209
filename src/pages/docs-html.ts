/**
 * The HTML shell of `GET /docs`. Its script and stylesheet are separate same-origin files, so
 * the page runs under a Content-Security-Policy that allows no inline code (see pages.ts).
 */
export const DOCS_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>shiftlock API reference</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/docs/app.css">
<script src="/docs/app.js" defer></script>
</head>
<body>
<header>
  <h1 id="title">shiftlock API</h1>
  <p id="intro"></p>
  <form class="settings" aria-label="Credentials" autocomplete="off">
    <div class="field"><label for="token">Token (kept in this tab only)</label><input id="token" type="password" autocomplete="off"></div>
    <div class="field"><label for="namespace">Namespace</label><input id="namespace" placeholder="demo"></div>
    <div class="field"><label for="filter">Filter operations</label><input id="filter" type="search" placeholder="claims, POST, watch…"></div>
  </form>
  <p class="links"><a href="/openapi.json">openapi.json</a></p>
</header>
<main id="operations" aria-live="polite">Loading /openapi.json…</main>
</body>
</html>
`;
