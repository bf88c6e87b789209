/**
 * The script of `GET /ui` (served as `/ui/app.js`): the live operations dashboard.
 *
 * Guarantees:
 * - Asks for a namespace and a token (kept in `sessionStorage`: this tab only); `/ui?ns=NS#token=T`
 *   opens NS with T directly and removes the token from the address bar. Every call goes to
 *   this origin only, with that token (`Authorization` header; WebSockets use the
 *   `shiftlock.bearer.<token>` subprotocol, docs/protocol.md#wire-conventions).
 * - Claims are listed a page at a time from the namespace index (docs/protocol.md#listing: `prefix`,
 *   `phase`, `owner` filters, opaque cursors), so 10,000 claims cost one page of DOM.
 * - Every claim on screen is watched: its row changes when the claim's watch delivers an
 *   event (acquire, prepare, commit, abort, release, expiry), each event joins that claim's
 *   timeline, and a prepared transfer shows as "prepared → successor" until it commits or
 *   aborts. Events are acknowledged per docs/protocol.md#watch-flow-control; a closed watch resumes from the last version
 *   it showed (`afterVersion`), so no event is skipped. No request is repeated on a timer: the
 *   only timer re-renders the expiry countdowns from `expiresAtMs`.
 * - Generations and scopes come from the index when the namespace opens and on "Refresh"
 *   (the index may lag the objects by up to 2 s; a claim's row is exact once its watch opened).
 * - Text from the server is inserted with `textContent`, never as HTML.
 *
 * Does not: change anything (read role suffices), or watch generations and scopes (no watch
 * exists for a generation; scope rows are refreshed on demand).
 *
 * Plain browser JavaScript in a string (the Worker's type environment has no DOM), tested end
 * to end in headless Chromium by test/e2e/dashboard.test.ts.
 */
import { PAGE_CLOCK } from "./page-clock.ts";
import { PAGE_COMMON } from "./page-common.ts";

export const UI_SCRIPT = String.raw`"use strict";
(function () {
${PAGE_COMMON}
${PAGE_CLOCK}
  var PAGE_SIZE = 100;
  var TIMELINE_MAX = 50;
  var PING_MS = 30000;

  var state = { ns: "", cursors: [null], page: 0, next: null, rows: new Map(), timelines: new Map(), selected: null };

  function $(id) { return document.getElementById(id); }
  function status(text) { $("status").textContent = text; }
  function nsPath(rest) { return "/v1/ns/" + encodeURIComponent(state.ns) + rest; }

  function api(path) {
    return fetch(path, { headers: { Authorization: "Bearer " + token() } }).then(function (res) {
      return res.json().then(function (body) {
        if (!res.ok) throw new Error(res.status + " " + ((body.error && body.error.code) || "") + ": " + ((body.error && body.error.message) || ""));
        return body;
      });
    });
  }

  function expiresIn(record, now) {
    if (!record || record.phase === "unowned") return "—";
    var ms = record.expiresAtMs - now;
    return ms <= 0 ? "expired" : (ms / 1000).toFixed(ms < 10000 ? 1 : 0) + " s";
  }
  function phaseText(record) {
    if (!record) return "absent";
    if (record.pendingSuccessor) return record.phase + " → " + record.pendingSuccessor;
    return record.phase;
  }

  // One row per claim on screen, updated in place from the listing and from its watch.
  function renderRow(row) {
    var r = row.record;
    var cells = row.tr.children;
    cells[1].textContent = r ? r.ownerGeneration || "—" : "—";
    cells[2].textContent = r ? r.fencingToken : "—";
    cells[3].textContent = phaseText(r);
    cells[4].textContent = expiresIn(r, nowMs());
    cells[5].textContent = r ? r.reason : "";
    cells[6].textContent = r ? r.version : "";
    row.tr.setAttribute("data-phase", r ? r.phase : "absent");
    row.tr.setAttribute("data-owner", r ? r.ownerGeneration : "");
    row.tr.setAttribute("data-token", r ? r.fencingToken : "");
    row.tr.setAttribute("data-version", r ? r.version : "");
    row.tr.setAttribute("data-successor", r ? r.pendingSuccessor : "");
    if (state.selected === row.name) renderTimeline(row);
  }

  function renderTimeline(row) {
    $("timeline-title").textContent = "Timeline of " + row.name;
    var list = $("timeline");
    list.textContent = "";
    row.timeline.slice().reverse().forEach(function (e) {
      list.appendChild(el("li", { "data-reason": e.reason }, [
        el("time", { text: new Date(e.timeMs).toISOString().slice(11, 23) }), " ",
        el("strong", { text: e.reason }), " token " + e.token + " owner " + (e.owner || "—") +
          (e.successor ? " → " + e.successor : "") + " (version " + e.version + ")",
      ]));
    });
  }

  function watchUrl(name, afterVersion) {
    var proto = location.protocol === "https:" ? "wss:" : "ws:";
    var url = proto + "//" + location.host + nsPath("/claims/" + encodeURIComponent(name) + "/watch");
    return afterVersion ? url + "?afterVersion=" + afterVersion : url;
  }

  function openWatch(row, attempt) {
    if (row.closed) return;
    var after = row.record ? row.record.version : "";
    var ws = new WebSocket(watchUrl(row.name, after), ["shiftlock.bearer." + token()]);
    row.ws = ws;
    var ping = setInterval(function () { if (ws.readyState === 1) ws.send('{"type":"ping"}'); }, PING_MS);
    ws.onopen = function () { attempt = 0; row.tr.setAttribute("data-watching", "true"); };
    ws.onmessage = function (message) {
      var m = JSON.parse(message.data);
      if (m.type === "snapshot") {
        row.record = m.claim;
      } else if (m.type === "event") {
        row.record = m.claim;
        row.timeline.push({ timeMs: m.timeMs, reason: m.reason, token: m.claim.fencingToken, owner: m.claim.ownerGeneration,
          successor: m.claim.pendingSuccessor, version: m.claim.version });
        if (row.timeline.length > TIMELINE_MAX) row.timeline.shift();
        ws.send(JSON.stringify({ type: "ack", version: m.claim.version }));
      } else {
        return;
      }
      renderRow(row);
    };
    ws.onclose = function () {
      clearInterval(ping);
      row.tr.removeAttribute("data-watching");
      if (row.closed) return;
      // Resume from the last version shown; back off (with jitter) while the server is away.
      var delay = Math.min(10000, 250 * Math.pow(2, attempt)) * (0.5 + Math.random() / 2);
      setTimeout(function () { openWatch(row, attempt + 1); }, delay);
    };
  }

  function closeWatches() {
    state.rows.forEach(function (row) {
      row.closed = true;
      if (row.ws) row.ws.close(1000, "off screen");
    });
    state.rows = new Map();
  }

  function claimQuery() {
    var q = new URLSearchParams({ limit: String(PAGE_SIZE) });
    ["prefix", "phase", "owner"].forEach(function (k) {
      var v = $("filter-" + k).value;
      if (v !== "") q.set(k, v);
    });
    var cursor = state.cursors[state.page];
    if (cursor) q.set("cursor", cursor);
    return q.toString();
  }

  function loadClaims() {
    status("loading claims…");
    return api(nsPath("/claims?" + claimQuery())).then(function (body) {
      closeWatches();
      var tbody = $("claims-body");
      tbody.textContent = "";
      body.claims.forEach(function (record) {
        var select = el("button", { type: "button", class: "link", text: record.name, "aria-label": "Timeline of " + record.name });
        var tr = el("tr", { "data-name": record.name }, [el("th", { scope: "row" }, [select]),
          el("td"), el("td"), el("td"), el("td", { class: "expiry" }), el("td"), el("td")]);
        // A claim's timeline outlives its row: paging or filtering away and back keeps it.
        if (!state.timelines.has(record.name)) state.timelines.set(record.name, []);
        var row = { name: record.name, record: record, tr: tr, timeline: state.timelines.get(record.name), ws: null, closed: false };
        select.addEventListener("click", function () { state.selected = row.name; renderTimeline(row); $("timeline-panel").hidden = false; });
        state.rows.set(record.name, row);
        tbody.appendChild(tr);
        renderRow(row);
        openWatch(row, 0);
      });
      state.next = body.cursor;
      $("prev-page").disabled = state.page === 0;
      $("next-page").disabled = body.cursor === null;
      $("page-label").textContent = "page " + (state.page + 1) + " · " + body.claims.length + " claims";
      status("namespace " + state.ns + ": watching " + body.claims.length + " claims on this page");
      document.body.setAttribute("data-ready", "true");
    }).catch(function (err) { status("could not list claims: " + err.message); });
  }

  function loadTable(path, key, bodyId, columns) {
    return api(nsPath(path)).then(function (body) {
      var tbody = $(bodyId);
      tbody.textContent = "";
      body[key].forEach(function (item) {
        tbody.appendChild(el("tr", {}, columns.map(function (c, i) {
          var value = typeof c === "function" ? c(item) : String(item[c]);
          return i === 0 ? el("th", { scope: "row", text: value }) : el("td", { text: value });
        })));
      });
      return body[key].length;
    });
  }

  function loadOthers() {
    var search = $("filter-service").value;
    return Promise.all([
      loadTable("/generations?limit=500" + (search ? "&service=" + encodeURIComponent(search) : ""), "generations", "generations-body",
        ["id", "service", "state", "instanceId", function (g) { return new Date(g.updatedAtMs).toISOString(); }, "reason"]),
      loadTable("/scopes?limit=500", "scopes", "scopes-body",
        [function (s) { return s.volumeId + "/" + s.objectStoreId + (s.key ? "/" + s.key : ""); }, "generation",
          function (s) { return s.held ? "held" : "free"; }, function (s) { return s.wantLock ? "yes" : "no"; },
          function (s) { return s.leaseExpiresAtMs ? new Date(s.leaseExpiresAtMs).toISOString() : "—"; }]),
    ]).catch(function (err) { status("could not list generations or scopes: " + err.message); });
  }

  function open(ns) {
    state.ns = ns;
    state.timelines = new Map();
    state.cursors = [null];
    state.page = 0;
    $("connect").hidden = true;
    $("dashboard").hidden = false;
    $("ns-label").textContent = ns;
    var url = new URL(location.href);
    url.searchParams.set("ns", ns);
    url.hash = "";
    history.replaceState(null, "", url.pathname + url.search);
    return Promise.all([loadClaims(), loadOthers()]);
  }

  takeTokenFromFragment();
  var params = new URLSearchParams(location.search);
  if (params.get("ns")) sessionStorage.setItem(NS_KEY, params.get("ns"));
  $("ns-input").value = sessionStorage.getItem(NS_KEY) || "";
  $("token-input").value = token();

  $("connect").addEventListener("submit", function (e) {
    e.preventDefault();
    sessionStorage.setItem(TOKEN_KEY, $("token-input").value);
    sessionStorage.setItem(NS_KEY, $("ns-input").value);
    open($("ns-input").value);
  });
  $("switch").addEventListener("click", function () {
    closeWatches();
    $("dashboard").hidden = true;
    $("connect").hidden = false;
    $("ns-input").focus();
  });
  $("claim-filters").addEventListener("submit", function (e) {
    e.preventDefault();
    state.cursors = [null];
    state.page = 0;
    loadClaims();
  });
  $("next-page").addEventListener("click", function () {
    if (state.next === null) return;
    state.cursors[state.page + 1] = state.next;
    state.page += 1;
    loadClaims();
  });
  $("prev-page").addEventListener("click", function () {
    if (state.page === 0) return;
    state.page -= 1;
    loadClaims();
  });
  $("generation-filters").addEventListener("submit", function (e) {
    e.preventDefault();
    loadOthers();
  });
  $("close-timeline").addEventListener("click", function () { state.selected = null; $("timeline-panel").hidden = true; });
  setInterval(function () {
    var now = nowMs();
    state.rows.forEach(function (row) { row.tr.querySelector(".expiry").textContent = expiresIn(row.record, now); });
  }, 1000);

  if (sessionStorage.getItem(NS_KEY) && token()) open(sessionStorage.getItem(NS_KEY));
  else $("connect").hidden = false;
})();
`;
