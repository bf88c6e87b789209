/**
 * `GET /ui` (served as `/ui/app.js`): the live operations dashboard, bundled from TypeScript
 * by src/serve/build-pages.ts with the client it imports (one watch client in the codebase).
 *
 * Guarantees:
 * - Asks for a namespace and a token (kept in `sessionStorage`: this tab only);
 *   `/ui?ns=NS#token=T` opens NS with T directly and removes the token from the address bar.
 *   Every call goes to this origin only, with that token in its `Authorization` header;
 *   watches open with single-use watch tickets (docs/protocol.md#watch-tickets), so the
 *   token never travels in a URL or a subprotocol. A token the server refuses
 *   (`unauthorized`, `forbidden`) brings the token form back with the server's reason.
 * - Claims are listed a page at a time from the namespace index (docs/protocol.md#listing:
 *   `prefix`, `phase`, `owner` filters, opaque cursors), so 10,000 claims cost one page of DOM.
 *   Each row then follows its own object (claim-row.ts): what it shows, deadlines included,
 *   comes from the object, never from the index; its timeline opens with the retained history.
 * - Generations and scopes come from the index when the namespace opens and on "Refresh"
 *   (the index may lag the objects by up to 2 s); a scope row names its holding participant.
 * - Durations read as people read them (format.ts). Text from the server is inserted with
 *   `textContent`, never as HTML.
 *
 * - Evict buttons (claims and scopes that are held) appear only when the token's `whoami`
 *   says `admin`, and act only after a confirmation (evict.ts).
 *
 * Does not: change anything but by an admin's confirmed eviction (the read role suffices),
 * or watch generations and scopes (no watch exists for a generation; scope rows are
 * refreshed on demand and after an eviction).
 */
import { systemClock } from "../../core/clock.ts";
import { HttpClaimsBackend } from "../../client/claims/http-claims-backend.ts";
import { HttpCoordinator } from "../../client/coord/coord-http.ts";
import { HttpTransport } from "../../client/transport/http-transport.ts";
import type { ClaimPhase } from "../../protocol/claims.ts";
import { hasCode } from "../../protocol/errors.ts";
import { listClaims, listGenerations, listScopes } from "../../protocol/listing-routes.ts";
import { NS_KEY, TOKEN_KEY, byId, el, storedNamespace, takeTokenFromFragment, token } from "../dom.ts";
import { formatAgo } from "../format.ts";
import { ClaimRow, newestFirst, type Timeline, type TimelineEntry } from "./claim-row.ts";
import { evictButton, evictDialog, scopeLabel } from "./evict.ts";

const PAGE_SIZE = 100;

/** The page's one clock: countdowns are computed from it (expiry itself is the server's). */
const nowMs = (): number => systemClock.nowMs();

interface Session {
  ns: string;
  transport: HttpTransport;
  claims: HttpClaimsBackend;
  coord: HttpCoordinator;
}

const state = {
  session: undefined as Session | undefined,
  cursors: [undefined] as (string | undefined)[],
  page: 0,
  next: null as string | null,
  rows: new Map<string, ClaimRow>(),
  timelines: new Map<string, Timeline>(),
  selected: undefined as string | undefined,
  /** The token's role is `admin` (whoami): Evict buttons are shown. */
  admin: false,
};

const confirmEvict = evictDialog(
  () => state.session,
  (target) => {
    status(`evicted ${target.kind === "claim" ? target.name : scopeLabel(target.scope)}`);
    // A claim's row hears it from its watch; scope rows are a summary read again.
    if (target.kind === "scope") withSession((s) => void loadOthers(s));
  },
);

function status(text: string): void {
  byId("status").textContent = text;
}

function message(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

function refused(err: unknown): boolean {
  return hasCode(err, "unauthorized") || hasCode(err, "forbidden");
}

function renderTimeline(row: ClaimRow): void {
  byId("timeline-title").textContent = `Timeline of ${row.name}`;
  const list = byId("timeline");
  list.textContent = "";
  for (const e of newestFirst(row.timeline)) {
    list.append(
      el("li", { "data-reason": e.reason, "data-version": e.version.toString() }, [
        el("time", { text: new Date(e.timeMs).toISOString().slice(11, 23) }),
        " ",
        el("strong", { text: e.reason }),
        ` token ${e.token} owner ${e.owner || "—"}${e.successor ? ` → ${e.successor}` : ""} (version ${e.version})`,
      ]),
    );
  }
}

function closeRows(): void {
  for (const row of state.rows.values()) row.close();
  state.rows = new Map();
}

/** Back to the token form, saying why (the server's refusal). */
function backToForm(reason: string): void {
  closeRows();
  void state.session?.claims.close();
  state.session = undefined;
  sessionStorage.removeItem(TOKEN_KEY);
  byId("dashboard").hidden = true;
  byId("connect").hidden = false;
  byId<HTMLInputElement>("token-input").value = "";
  const error = byId("connect-error");
  error.textContent = `The server refused the token: ${reason}`;
  error.hidden = false;
  status("");
  byId("token-input").focus();
}

async function loadClaims(session: Session): Promise<void> {
  status("loading claims…");
  const query = {
    limit: PAGE_SIZE,
    prefix: byId<HTMLInputElement>("filter-prefix").value || undefined,
    phase: (byId<HTMLSelectElement>("filter-phase").value || undefined) as ClaimPhase | undefined,
    owner: byId<HTMLInputElement>("filter-owner").value || undefined,
    cursor: state.cursors[state.page],
  };
  let page;
  try {
    page = await session.transport.call(listClaims, { query });
  } catch (err) {
    if (refused(err)) return backToForm(message(err));
    status(`could not list claims: ${message(err)}`);
    return;
  }
  if (state.session !== session) return;
  closeRows();
  const tbody = byId("claims-body");
  tbody.textContent = "";
  const ctx = {
    claims: session.claims,
    nowMs,
    onRefused: (reason: string) => backToForm(reason),
    onChange: (row: ClaimRow) => {
      if (state.selected === row.name) renderTimeline(row);
    },
    admin: () => state.admin,
    confirmEvict,
  };
  for (const listed of page.claims) {
    // A claim's timeline outlives its row: paging or filtering away and back keeps it.
    const timeline = state.timelines.get(listed.name) ?? new Map<bigint, TimelineEntry>();
    state.timelines.set(listed.name, timeline);
    const row = new ClaimRow(listed, timeline, ctx, (selected) => {
      state.selected = selected.name;
      renderTimeline(selected);
      byId("timeline-panel").hidden = false;
    });
    state.rows.set(listed.name, row);
    tbody.append(row.tr);
    row.open();
  }
  state.next = page.cursor;
  byId<HTMLButtonElement>("prev-page").disabled = state.page === 0;
  byId<HTMLButtonElement>("next-page").disabled = page.cursor === null;
  byId("page-label").textContent = `page ${state.page + 1} · ${page.claims.length} claims`;
  status(`namespace ${session.ns}: watching ${page.claims.length} claims on this page`);
  document.body.setAttribute("data-ready", "true");
}

/** Rows of a summary table: the first cell is the row's header, the others text or a control. */
function fillTable(bodyId: string, rows: readonly (readonly [string, ...(string | Node)[]])[]): void {
  const tbody = byId(bodyId);
  tbody.textContent = "";
  for (const [head, ...cells] of rows) {
    tbody.append(el("tr", {}, [el("th", { scope: "row", text: head }), ...cells.map((c) => el("td", {}, [c]))]));
  }
}

async function loadOthers(session: Session): Promise<void> {
  const service = byId<HTMLInputElement>("filter-service").value || undefined;
  try {
    const [generations, scopes] = await Promise.all([
      session.transport.call(listGenerations, { query: { limit: 500, service } }),
      session.transport.call(listScopes, { query: { limit: 500 } }),
    ]);
    const now = nowMs();
    fillTable(
      "generations-body",
      generations.generations.map((g) => [
        g.id,
        g.service,
        g.state,
        g.instanceId,
        formatAgo(g.updatedAtMs, now),
        g.reason,
      ]),
    );
    fillTable(
      "scopes-body",
      scopes.scopes.map((s) => [
        scopeLabel(s),
        s.generation.toString(),
        s.held ? s.holder || "held" : "free",
        s.wantLock ? "yes" : "no",
        state.admin && s.held ? evictButton({ kind: "scope", scope: s }, confirmEvict) : "",
      ]),
    );
  } catch (err) {
    if (refused(err)) return backToForm(message(err));
    status(`could not list generations or scopes: ${message(err)}`);
  }
}

function open(ns: string): void {
  closeRows();
  void state.session?.claims.close();
  const options = { baseUrl: location.origin, token: token(), namespace: ns };
  let session: Session;
  try {
    // In a browser the client opens each watch with a single-use ticket (its default).
    session = {
      ns,
      transport: new HttpTransport(options),
      claims: new HttpClaimsBackend(options),
      coord: new HttpCoordinator(options),
    };
  } catch (err) {
    // A namespace the protocol cannot name, refused before any request.
    byId("connect").hidden = false;
    byId("connect-error").textContent = message(err);
    byId("connect-error").hidden = false;
    return;
  }
  state.session = session;
  state.timelines = new Map();
  state.cursors = [undefined];
  state.page = 0;
  byId("connect").hidden = true;
  byId("connect-error").hidden = true;
  byId("dashboard").hidden = false;
  byId("ns-label").textContent = ns;
  const url = new URL(location.href);
  url.searchParams.set("ns", ns);
  url.hash = "";
  history.replaceState(null, "", url.pathname + url.search);
  state.admin = false;
  document.body.removeAttribute("data-role");
  void loadClaims(session);
  void loadRole(session).then(() => loadOthers(session));
}

/** Whether this token may evict (whoami): re-renders the rows with or without Evict. */
async function loadRole(session: Session): Promise<void> {
  try {
    const { role } = await session.claims.whoami();
    if (state.session !== session) return;
    state.admin = role === "admin";
    document.body.setAttribute("data-role", role);
    for (const row of state.rows.values()) row.render();
  } catch (err) {
    if (refused(err)) return backToForm(message(err));
    status(`could not read this token's role: ${message(err)}`);
  }
}

function withSession(action: (session: Session) => void): void {
  if (state.session !== undefined) action(state.session);
}

takeTokenFromFragment();
const params = new URLSearchParams(location.search);
const fromQuery = params.get("ns");
if (fromQuery !== null && fromQuery !== "") sessionStorage.setItem(NS_KEY, fromQuery);
byId<HTMLInputElement>("ns-input").value = storedNamespace();
byId<HTMLInputElement>("token-input").value = token();

byId("connect").addEventListener("submit", (e) => {
  e.preventDefault();
  sessionStorage.setItem(TOKEN_KEY, byId<HTMLInputElement>("token-input").value);
  sessionStorage.setItem(NS_KEY, byId<HTMLInputElement>("ns-input").value);
  open(byId<HTMLInputElement>("ns-input").value);
});
byId("switch").addEventListener("click", () => {
  closeRows();
  byId("dashboard").hidden = true;
  byId("connect").hidden = false;
  byId("ns-input").focus();
});
byId("claim-filters").addEventListener("submit", (e) => {
  e.preventDefault();
  state.cursors = [undefined];
  state.page = 0;
  withSession((s) => void loadClaims(s));
});
byId("next-page").addEventListener("click", () => {
  if (state.next === null) return;
  state.cursors[state.page + 1] = state.next;
  state.page += 1;
  withSession((s) => void loadClaims(s));
});
byId("prev-page").addEventListener("click", () => {
  if (state.page === 0) return;
  state.page -= 1;
  withSession((s) => void loadClaims(s));
});
byId("generation-filters").addEventListener("submit", (e) => {
  e.preventDefault();
  withSession((s) => void loadOthers(s));
});
byId("close-timeline").addEventListener("click", () => {
  state.selected = undefined;
  byId("timeline-panel").hidden = true;
});
// The one timer: countdowns (and, through them, a read of any claim whose shown deadline passed).
setInterval(() => {
  for (const row of state.rows.values()) row.tick();
}, 1000);

if (storedNamespace() !== "" && token() !== "") open(storedNamespace());
else byId("connect").hidden = false;
