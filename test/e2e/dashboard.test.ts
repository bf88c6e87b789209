// GET /ui in a real browser (headless Chromium, test/e2e/browser.ts): the dashboard lists the
// claims created through the API from the namespace index, and its rows follow each claim's
// object — an acquire, a prepared and committed transfer, and a release each show up in the
// row (and in the claim's timeline, which opens with the history from before the page
// loaded) without reloading; a claim kept by renewals (which send no event) never reads
// "expired", nor does a bound claim, which counts down to its owner's lease; durations read
// as people read them; a coord row names its holder; a refused token returns to the token
// form with the reason; disabled paging buttons look disabled, the filter row lines up, and
// at 400 px the tables scroll in their boxes, not the page.
// Also takes the screenshot the README shows (docs/dashboard.png) when SHIFTLOCK_SCREENSHOT=1.
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, expect, inject, it } from "vitest";
import { HttpClaimsBackend } from "../../src/client/index.ts";
import { describeBrowser, launchChromium } from "./browser.ts";

/** Generous: a row follows its watch in well under a second on a quiet machine (see docs/dashboard.md). */
const ROW_UPDATE_TIMEOUT_MS = 10_000;
const TTL_MS = 60_000;
/** payments-leader's lease: long enough to read in minutes. */
const HOUR_MS = 3_600_000;

let browser: Browser | undefined;
let page: Page;
let claims: HttpClaimsBackend;
const errors: string[] = [];
const namespace = `e2e-ui-${process.pid}`;
const names = ["payments-leader", "scheduler", "shard-0", "shard-1"];
const scope = { volumeId: "vol-ui", objectStoreId: "store-ui" };
const HOLDER = "writer-7";

/** Wait until the namespace index lists `count` items of `kind` (it follows the objects within 2 s). */
async function listed(kind: "claims" | "scopes", count: number): Promise<void> {
  for (;;) {
    const res = await fetch(`${inject("serverUrl")}/v1/ns/${namespace}/${kind}`, {
      headers: { authorization: "Bearer dev-token" },
    });
    const body: Record<string, unknown[] | undefined> = await res.json();
    if (body[kind]?.length === count) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** The row of `claim` has `attribute` = `value` (it follows the claim's watch). */
async function rowShows(claim: string, attribute: string, value: string): Promise<void> {
  await page.waitForSelector(`tr[data-name="${claim}"][${attribute}="${value}"]`, { timeout: ROW_UPDATE_TIMEOUT_MS });
}

/**
 * Record every text the row's deadline cell shows, with the phase the row showed at that
 * moment, in `window[into]` (in the page, as a script: the test's own types know no DOM).
 */
async function recordExpiryCell(claim: string, into: string): Promise<void> {
  await page.evaluate(`(() => {
    const row = document.querySelector('tr[data-name="${claim}"]');
    const seen = (window.${into} = []);
    const record = () => seen.push(row.getAttribute("data-phase") + ":" + row.querySelector(".expiry").textContent);
    record();
    new MutationObserver(record).observe(row, { subtree: true, childList: true, characterData: true, attributes: true });
  })()`);
}

describeBrowser("the /ui dashboard in headless Chromium", () => {
  beforeAll(async () => {
    claims = new HttpClaimsBackend({ baseUrl: inject("serverUrl"), token: "dev-token", namespace });
    for (const claimName of names) {
      const ttlMs = claimName === "payments-leader" ? HOUR_MS : TTL_MS;
      await claims.acquireClaim({ claimName, generationId: "gen-a", ttlMs });
    }
    const lease = await fetch(
      `${inject("serverUrl")}/v1/ns/${namespace}/volumes/${scope.volumeId}/stores/${scope.objectStoreId}/leases`,
      {
        method: "POST",
        headers: { authorization: "Bearer dev-token", "content-type": "application/json" },
        body: JSON.stringify({ participantId: HOLDER, ttlMs: HOUR_MS }),
      },
    );
    expect(lease.status).toBe(201);
    // The index may lag the objects (docs/protocol.md#listing: at most 2 s): wait until it lists them all.
    await listed("claims", names.length);
    await listed("scopes", 1);
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    // Every WebSocket the page opens: its URL and subprotocols.
    await page.addInitScript(`
      window.openedSockets = [];
      const Native = window.WebSocket;
      window.WebSocket = class extends Native {
        constructor(url, protocols) {
          super(url, protocols);
          window.openedSockets.push({ url: String(url), protocols: [].concat(protocols ?? []) });
        }
      };
    `);
    page.on("pageerror", (e) => errors.push(e.message));
    page.on("console", (m) => {
      if (m.type() === "error") errors.push(m.text());
    });
    await page.goto(`${inject("serverUrl")}/ui?ns=${namespace}#token=dev-token`);
    await page.waitForSelector("body[data-ready=true]");
    for (const claim of names) await page.waitForSelector(`tr[data-name="${claim}"][data-watching=true]`);
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await claims.close();
  });

  it("lists the namespace's claims with owner, token and phase, and keeps the token out of the address bar", async () => {
    const rows = await page.locator("#claims-body tr").all();
    const shown = await Promise.all(rows.map(async (r) => (await r.getAttribute("data-name")) ?? ""));
    expect(shown).toEqual([...names].sort());
    await rowShows("scheduler", "data-owner", "gen-a");
    await rowShows("scheduler", "data-phase", "owned");
    expect(new URL(page.url()).hash).toBe("");
    expect(new URL(page.url()).searchParams.get("ns")).toBe(namespace);
    expect(errors).toEqual([]);
  });

  it("follows a release, an acquire by another generation, and a transfer prepared then committed", async () => {
    const held = await claims.getClaim("shard-0");
    await claims.releaseClaim({ claimName: "shard-0", generationId: "gen-a", token: held.fencingToken });
    await rowShows("shard-0", "data-phase", "unowned");

    const taken = await claims.acquireClaim({ claimName: "shard-0", generationId: "gen-b", ttlMs: TTL_MS });
    await rowShows("shard-0", "data-owner", "gen-b");
    await rowShows("shard-0", "data-token", taken.fencingToken.toString());

    const current = await claims.getClaim("shard-1");
    const request = { claimName: "shard-1", fromGeneration: "gen-a", toGeneration: "gen-b", ttlMs: TTL_MS };
    await claims.prepareTransfer({ ...request, token: current.fencingToken });
    await rowShows("shard-1", "data-successor", "gen-b");
    // As docs/dashboard.md says: the phase, then the successor it is reserved for.
    expect(await page.textContent(`tr[data-name="shard-1"] td:nth-child(4)`)).toBe("reserved → gen-b");
    const committed = await claims.commitTransfer({ ...request, expectedToken: current.fencingToken });
    await rowShows("shard-1", "data-owner", "gen-b");
    await rowShows("shard-1", "data-token", committed.fencingToken.toString());
    await rowShows("shard-1", "data-successor", "");

    await page.click(`tr[data-name="shard-1"] button`);
    const reasons = await Promise.all(
      (await page.locator("#timeline li").all()).map(async (li) => (await li.getAttribute("data-reason")) ?? ""),
    );
    // The timeline opens with the claim's retained history: the acquire before the page opened.
    expect(reasons).toEqual(["transfer_committed", "transfer_prepared", "acquired"]);
    expect(errors).toEqual([]);
  });

  it("filters through the index (name prefix) and comes back to the whole list, timelines kept", async () => {
    await page.fill("#filter-prefix", "shard-");
    await page.click("#claim-filters button[type=submit]");
    await page.waitForSelector("#page-label:text-is('page 1 · 2 claims')");
    const rows = await page.locator("#claims-body tr").all();
    expect(await Promise.all(rows.map(async (r) => await r.getAttribute("data-name")))).toEqual(["shard-0", "shard-1"]);
    await page.fill("#filter-prefix", "");
    await page.click("#claim-filters button[type=submit]");
    await page.waitForSelector(`#page-label:text-is('page 1 · ${names.length} claims')`);
    await page.waitForSelector(`tr[data-name="scheduler"][data-watching=true]`);
    // A claim's timeline survives its row being paged or filtered away and back.
    await page.click(`tr[data-name="shard-1"] button`);
    // Each version once: the watch reopened with the row replays what the timeline holds.
    const versions = await Promise.all(
      (await page.locator("#timeline li").all()).map(async (li) => (await li.getAttribute("data-reason")) ?? ""),
    );
    expect(versions).toEqual(["transfer_committed", "transfer_prepared", "acquired"]);
    if (process.env["SHIFTLOCK_SCREENSHOT"] === "1")
      await page.screenshot({ path: "docs/dashboard.png", fullPage: true });
  });

  it("reads durations as people do, and names the holder of a coord scope", async () => {
    // 3,600,000 ms minus the seconds since the acquire: "59 min", never "3582 s".
    await page.waitForSelector(`tr[data-name="payments-leader"] td.expiry:text-is("59 min")`);
    await page.waitForSelector(`tr[data-name="scheduler"] td.expiry:text-matches("^[0-9]+ s$")`);
    const scopeRow = page.locator("#scopes-body tr", { hasText: `${scope.volumeId}/${scope.objectStoreId}` });
    expect(await scopeRow.locator("td").nth(1).textContent()).toBe(HOLDER);
    expect(errors).toEqual([]);
  });

  it("never shows a claim kept by renewals as expired, and shows the deadline of its last renewal", async () => {
    // Renewals send no watch event: the page learns each new deadline from the object once the
    // one it shows has passed. ttl 6 s, renewed every 1.5 s (a runtime's ttl/4), 6 times: the
    // page shows the last renewal's deadline from its read after the previous one passed until
    // the claim expires, ttl − 1.5 s = 4.5 s (at 3 s / 0.75 s that window was 2.25 s, which a
    // loaded machine's page read could miss).
    const ttlMs = 6000;
    const claimName = "renewed-leader";
    let held = await claims.acquireClaim({ claimName, generationId: "gen-r", ttlMs });
    await listed("claims", names.length + 1);
    await page.click("#claim-filters button[type=submit]");
    await page.waitForSelector(`tr[data-name="${claimName}"][data-watching=true]`);
    await recordExpiryCell(claimName, "expirySeen");
    for (let i = 0; i < 6; i++) {
      await new Promise((resolve) => setTimeout(resolve, ttlMs / 4)); // the renewal cadence, not a wait for the page
      held = await claims.renewClaim({ claimName, generationId: "gen-r", token: held.fencingToken, ttlMs });
    }
    // Synchronised on the page: it shows the last renewal's deadline (read from the object).
    await page.waitForSelector(`tr[data-name="${claimName}"][data-expires="${held.expiresAtMs}"][data-phase=owned]`, {
      timeout: ROW_UPDATE_TIMEOUT_MS,
    });
    // Without renewals it expires: the object's watch reports it (phase unowned, reason expired).
    await rowShows(claimName, "data-phase", "unowned");
    const seen = await page.evaluate<string[]>("window.expirySeen");
    const whileOwned = seen.filter((entry) => entry.startsWith("owned:"));
    expect(whileOwned.length).toBeGreaterThan(0);
    expect(whileOwned.filter((entry) => /expired/.test(entry))).toEqual([]);
    expect(await page.textContent(`tr[data-name="${claimName}"] td:nth-child(6)`)).toBe("expired");
    expect(errors).toEqual([]);
  });

  it("shows disabled Previous/Next as disabled, and lines the filter row's controls up", async () => {
    // One page of claims: neither Previous nor Next can be pressed, and neither looks pressable.
    await page.waitForSelector("#prev-page:disabled");
    await page.waitForSelector("#next-page:disabled");
    // (In the page, as a script: the test's own types know no DOM.)
    const look = (selector: string) =>
      page.evaluate<{ cursor: string; background: string; color: string }>(`(() => {
        const style = getComputedStyle(document.querySelector(${JSON.stringify(selector)}));
        return { cursor: style.cursor, background: style.backgroundColor, color: style.color };
      })()`);
    const enabled = await look("#claim-filters button[type=submit]");
    for (const selector of ["#prev-page", "#next-page"]) {
      const disabled = await look(selector);
      expect(disabled.cursor, selector).toBe("not-allowed");
      expect(disabled.background, selector).not.toBe(enabled.background);
      expect(disabled.color, selector).not.toBe(enabled.color);
    }
    // Prefix, phase, owner and Apply share one top and one bottom edge.
    const boxes = await Promise.all(
      ["#filter-prefix", "#filter-phase", "#filter-owner", "#claim-filters button[type=submit]"].map(
        async (selector) => (await page.locator(selector).boundingBox())!,
      ),
    );
    for (const box of boxes) {
      expect(box.y).toBeCloseTo(boxes[0]!.y, 0);
      expect(box.y + box.height).toBeCloseTo(boxes[0]!.y + boxes[0]!.height, 0);
    }
  });

  it("at 400 px wide, scrolls each table inside its box (its last column reachable), never the page", async () => {
    const narrow = await browser!.newPage({ viewport: { width: 400, height: 800 } });
    await narrow.goto(`${inject("serverUrl")}/ui?ns=${namespace}#token=dev-token`);
    await narrow.waitForSelector(`tr[data-name="payments-leader"][data-watching=true]`);
    await narrow.waitForSelector(`#scopes-body tr`);
    // Per table: wider than its box, and its last shown column inside the box once scrolled
    // to the end (a phone hides the least important columns, docs/dashboard.md).
    const layout = await narrow.evaluate(`(() => ({
      page: document.documentElement.scrollWidth,
      tables: Object.fromEntries([...document.querySelectorAll("#dashboard .table")].map((box) => {
        const wide = box.scrollWidth > box.clientWidth;
        box.scrollLeft = box.scrollWidth;
        const shown = [...box.querySelectorAll("thead th")].filter((th) => th.getClientRects().length > 0);
        const last = shown.at(-1).getBoundingClientRect();
        const edge = box.getBoundingClientRect();
        const id = box.closest("section").getAttribute("aria-labelledby");
        return [id, { wide, lastShown: last.left >= edge.left && last.right <= edge.right + 1 }];
      })),
    }))()`);
    expect(layout).toMatchObject({
      page: 400,
      tables: {
        "claims-title": { wide: true, lastShown: true },
        "generations-title": { lastShown: true },
        "scopes-title": { lastShown: true },
      },
    });
    await narrow.close();
  });

  it("counts a bound claim down to its owner's lease, read from the generation, never expired while kept", async () => {
    // Keepalives send no watch event, and the claim's own deadline trails them: the page reads
    // the generation (exact) once the lease deadline it shows has passed.
    // ttl 6 s, kept every 2 s (ttl/3): the page shows the last keepalive's deadline for 4 s.
    const ttlMs = 6000;
    const claimName = "bound-leader";
    const id = "gen-l";
    await claims.registerGeneration({ id, service: "ui", instanceId: "i" });
    let kept = await claims.keepaliveGeneration({ id, ttlMs });
    await claims.acquireClaim({ claimName, generationId: id, bound: true });
    await listed("claims", names.length + 2); // and renewed-leader, from the test before
    await page.click("#claim-filters button[type=submit]");
    await page.waitForSelector(`tr[data-name="${claimName}"][data-watching=true]`);
    await recordExpiryCell(claimName, "leaseSeen");
    for (let i = 0; i < 5; i++) {
      await new Promise((resolve) => setTimeout(resolve, ttlMs / 3)); // the keepalive cadence, not a wait for the page
      kept = await claims.keepaliveGeneration({ id, ttlMs });
    }
    // The page shows the last keepalive's deadline, exactly as the generation answered it.
    await page.waitForSelector(`tr[data-name="${claimName}"][data-lease-expires="${kept.leaseExpiresAtMs}"]`, {
      timeout: ROW_UPDATE_TIMEOUT_MS,
    });
    // Not kept any more: the lease ends and the claim with it.
    await rowShows(claimName, "data-phase", "unowned");
    const seen = await page.evaluate<string[]>("window.leaseSeen");
    const whileOwned = seen.filter((entry) => entry.startsWith("owned:"));
    expect(whileOwned.some((entry) => entry.endsWith("(lease)"))).toBe(true);
    expect(whileOwned.filter((entry) => /expired/.test(entry))).toEqual([]);
    expect(errors).toEqual([]);
  });

  it("opens every watch with a single-use ticket, never with the token", async () => {
    const sockets = await page.evaluate<{ url: string; protocols: string[] }[]>("window.openedSockets");
    expect(sockets.length).toBeGreaterThanOrEqual(names.length);
    for (const socket of sockets) {
      expect(new URL(socket.url).searchParams.get("ticket")).toMatch(/^v1\./);
      expect(socket.protocols).toEqual([]);
      expect(socket.url).not.toContain("dev-token");
    }
  });

  it("returns to the token form with the server's reason when the token is refused", async () => {
    const fresh = await browser!.newPage();
    await fresh.goto(`${inject("serverUrl")}/ui?ns=${namespace}#token=not-a-token`);
    await fresh.waitForSelector("#connect:not([hidden]) #connect-error:not([hidden])");
    expect(await fresh.textContent("#connect-error")).toContain("missing or unknown bearer token");
    expect(await fresh.isHidden("#dashboard")).toBe(true);
    expect(await fresh.inputValue("#ns-input")).toBe(namespace);
    await fresh.close();
  });

  it("offers no Evict to a token that is not an admin's", async () => {
    await page.waitForSelector("body[data-role=write]");
    expect(await page.locator("button.evict").count()).toBe(0);
  });

  it("lets an admin evict a held claim, only after a confirmation that Cancel leaves alone", async () => {
    const admin = await browser!.newPage();
    admin.on("pageerror", (e) => errors.push(e.message));
    await admin.goto(`${inject("serverUrl")}/ui?ns=${namespace}#token=dev-admin-token`);
    await admin.waitForSelector("body[data-role=admin]");
    const evict = `tr[data-name="scheduler"] button.evict`;
    await admin.waitForSelector(evict);
    // A held scope offers it too.
    await admin.waitForSelector(
      `#scopes-body button.evict[aria-label="Evict ${scope.volumeId}/${scope.objectStoreId}"]`,
    );

    await admin.click(evict);
    await admin.waitForSelector("#evict-dialog[open]");
    expect(await admin.textContent("#evict-what")).toContain("gen-a");
    await admin.click("#evict-cancel");
    expect(await admin.locator("#evict-dialog[open]").count()).toBe(0);
    expect((await claims.getClaim("scheduler")).phase).toBe("owned");

    await admin.click(evict);
    await admin.fill("#evict-note", "drill");
    await admin.click("#evict-confirm");
    await admin.waitForSelector(`tr[data-name="scheduler"][data-phase=unowned]`, { timeout: ROW_UPDATE_TIMEOUT_MS });
    const evicted = await claims.getClaim("scheduler");
    expect(evicted.phase).toBe("unowned");
    expect(evicted.reason).toBe("evicted");
    expect(await admin.locator(`${evict}`).count()).toBe(0);
    await admin.click(`tr[data-name="scheduler"] th button`);
    await admin.waitForSelector(`#timeline li[data-reason=evicted]`);
    await admin.close();
    expect(errors).toEqual([]);
  });

  it("opens from a form when no namespace or token is given", async () => {
    const fresh = await browser!.newPage();
    await fresh.goto(`${inject("serverUrl")}/ui`);
    await fresh.fill("#ns-input", namespace);
    await fresh.fill("#token-input", "dev-token");
    await fresh.press("#token-input", "Enter");
    await fresh.waitForSelector(`tr[data-name="payments-leader"]`);
    await fresh.close();
  });
});
