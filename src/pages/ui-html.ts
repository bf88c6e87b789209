/** The HTML shell of `GET /ui` (script and style are same-origin files; see pages.ts). */
export const UI_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>shiftlock dashboard</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/ui/app.css">
<script src="/ui/app.js" defer></script>
</head>
<body>
<header><h1>shiftlock</h1><p role="status" id="status" aria-live="polite"></p></header>
<form id="connect" hidden aria-label="Open a namespace" autocomplete="off">
  <div class="field"><label for="ns-input">Namespace</label><input id="ns-input" required></div>
  <div class="field"><label for="token-input">Token (kept in this tab only)</label><input id="token-input" type="password" autocomplete="off" required></div>
  <button type="submit">Open</button>
</form>
<main id="dashboard" hidden>
  <p>Namespace <strong id="ns-label"></strong> <button type="button" id="switch">Switch</button></p>
  <section aria-labelledby="claims-title">
    <h2 id="claims-title">Claims</h2>
    <form id="claim-filters" class="filters" aria-label="Filter claims">
      <div class="field"><label for="filter-prefix">Name prefix</label><input id="filter-prefix" type="search"></div>
      <div class="field"><label for="filter-phase">Phase</label>
        <select id="filter-phase"><option value="">any</option><option>owned</option><option>reserved</option><option>draining</option><option>unowned</option></select></div>
      <div class="field"><label for="filter-owner">Owner generation</label><input id="filter-owner" type="search"></div>
      <button type="submit">Apply</button>
    </form>
    <div class="table"><table>
      <caption>Claims on this page, live from their watches</caption>
      <thead><tr><th scope="col">claim</th><th scope="col">owner</th><th scope="col">token</th><th scope="col">phase</th><th scope="col">expires in</th><th scope="col">last reason</th><th scope="col">version</th></tr></thead>
      <tbody id="claims-body"></tbody>
    </table></div>
    <nav class="pager" aria-label="Claim pages"><button type="button" id="prev-page" disabled>Previous</button> <span id="page-label"></span> <button type="button" id="next-page" disabled>Next</button></nav>
  </section>
  <aside id="timeline-panel" hidden aria-labelledby="timeline-title">
    <h2 id="timeline-title">Timeline</h2>
    <button type="button" id="close-timeline">Close</button>
    <ol id="timeline" aria-live="polite"></ol>
  </aside>
  <section aria-labelledby="generations-title">
    <h2 id="generations-title">Generations</h2>
    <form id="generation-filters" class="filters" aria-label="Filter generations">
      <div class="field"><label for="filter-service">Service</label><input id="filter-service" type="search"></div>
      <button type="submit" id="refresh">Refresh generations and scopes</button>
    </form>
    <div class="table"><table>
      <caption>Generations (from the index)</caption>
      <thead><tr><th scope="col">id</th><th scope="col">service</th><th scope="col">state</th><th scope="col">instance</th><th scope="col">updated</th><th scope="col">reason</th></tr></thead>
      <tbody id="generations-body"></tbody>
    </table></div>
  </section>
  <section aria-labelledby="scopes-title">
    <h2 id="scopes-title">Coord scopes</h2>
    <div class="table"><table>
      <caption>Scopes (from the index)</caption>
      <thead><tr><th scope="col">scope</th><th scope="col">generation</th><th scope="col">lease</th><th scope="col">wantLock</th><th scope="col">lease expires</th></tr></thead>
      <tbody id="scopes-body"></tbody>
    </table></div>
  </section>
</main>
</body>
</html>
`;
