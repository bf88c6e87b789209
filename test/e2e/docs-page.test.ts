// GET /docs in a real browser (headless Chromium, test/e2e/browser.ts): the reference renders
// every operation of /openapi.json, filters them, and "Try it" sends the request the form
// shows with the token the user entered — here reading back a claim created through the API.
// Each response status lists only the codes its route declares; the title names the version.
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, expect, inject, it } from "vitest";
import pkg from "../../package.json" with { type: "json" };
import { ERROR_STATUS } from "../../src/protocol/errors.ts";
import { routeErrorCodes } from "../../src/protocol/route.ts";
import { ROUTES } from "../../src/protocol/routes.ts";
import { describeBrowser, launchChromium } from "./browser.ts";

let browser: Browser | undefined;
let page: Page;
const errors: string[] = [];

/** `name` of every element `selector` matches, in document order. */
async function attributes(selector: string, name: string): Promise<string[]> {
  const all = await page.locator(selector).all();
  return Promise.all(all.map(async (node) => (await node.getAttribute(name)) ?? ""));
}

interface OpenApiPaths {
  paths: Record<string, Record<string, { operationId: string }>>;
}

async function openApi(): Promise<OpenApiPaths> {
  const res = await fetch(`${inject("serverUrl")}/openapi.json`);
  const doc: OpenApiPaths = await res.json();
  return doc;
}

describeBrowser("the /docs API reference in headless Chromium", () => {
  beforeAll(async () => {
    browser = await launchChromium();
    page = await browser.newPage();
    page.on("pageerror", (e) => errors.push(e.message));
    page.on("console", (m) => {
      if (m.type() === "error") errors.push(m.text());
    });
    await page.goto(`${inject("serverUrl")}/docs#token=dev-token`);
    await page.waitForSelector("body[data-ready=true]");
  });

  afterAll(async () => {
    await browser?.close();
  });

  it("renders one entry per operation of /openapi.json and takes the token from the fragment", async () => {
    const doc = await openApi();
    const ids = Object.values(doc.paths).flatMap((item) => Object.values(item).map((op) => op.operationId));
    const shown = await attributes("details.op", "data-operation-id");
    expect(shown.sort()).toEqual(ids.sort());
    expect(await page.inputValue("#token")).toBe("dev-token");
    expect(new URL(page.url()).hash).toBe("");
    expect(errors).toEqual([]);
  });

  it("lists under each status only the codes its route can answer, and names the package version", async () => {
    expect(await page.textContent("#title")).toBe(`shiftlock API ${pkg.version}`);
    // Operation id → status → the codes shown (in the page, as a script: the test's own types know no DOM).
    const shown = await page.evaluate<{ id: string; statuses: Record<string, string[]> }[]>(`
      [...document.querySelectorAll("details.op")].map((op) => ({
        id: op.getAttribute("data-operation-id"),
        statuses: Object.fromEntries([...op.querySelectorAll("ul.responses > li")].map((li) => [
          li.getAttribute("data-status"),
          (li.querySelector(".codes")?.getAttribute("data-codes") ?? "").split(" ").filter((c) => c !== ""),
        ])),
      }))`);
    expect(shown.length).toBe(ROUTES.length);
    for (const route of ROUTES) {
      const expected: Record<string, string[]> = { [String(route.status)]: [] };
      for (const code of routeErrorCodes(route)) (expected[String(ERROR_STATUS[code])] ??= []).push(code);
      const op = shown.find((o) => o.id === route.operationId);
      const sorted = (byStatus: Record<string, string[]>) =>
        Object.fromEntries(Object.entries(byStatus).map(([status, codes]) => [status, [...codes].sort()]));
      expect(sorted(op?.statuses ?? {}), route.operationId).toEqual(sorted(expected));
    }
  });

  it("filters operations by what the user types, and hides the sections it leaves empty", async () => {
    await page.fill("#filter", "watch");
    const visible = await attributes("details.op:not([hidden])", "data-search");
    expect(visible.length).toBeGreaterThan(0);
    expect(visible.every((text) => text.includes("watch"))).toBe(true);
    // Per section: how many operations it shows, and whether it is shown.
    const sections = () =>
      page.evaluate<{ shown: boolean; ops: number }[]>(`
        [...document.querySelectorAll("#operations > section")].map((section) => ({
          shown: !section.hidden,
          ops: section.querySelectorAll("details.op:not([hidden])").length,
        }))`);
    const filtered = await sections();
    expect(filtered.some((section) => !section.shown)).toBe(true); // meta has no watch route
    for (const section of filtered) expect(section.shown).toBe(section.ops > 0);
    expect(await page.isHidden("#no-match")).toBe(true);
    await page.fill("#filter", "no-such-operation");
    expect((await sections()).every((section) => !section.shown)).toBe(true);
    expect(await page.textContent("#no-match")).toBe('No operation matches "no-such-operation".');
    await page.fill("#filter", "");
    expect((await sections()).every((section) => section.shown && section.ops > 0)).toBe(true);
    expect(await page.isHidden("#no-match")).toBe(true);
  });

  it("shows every name parameter's limit of 256 bytes", async () => {
    // name, in, description of every parameter row of every operation.
    const rows = await page.evaluate<string[][]>(`
      [...document.querySelectorAll("details.op .table tbody tr")].map((tr) =>
        [...tr.querySelectorAll("td")].map((td) => td.textContent))`);
    const pathNames = rows.filter(([name, where]) => where === "path" && name !== "leaseId");
    expect(new Set(pathNames.map(([name]) => name))).toEqual(
      new Set(["ns", "claim", "id", "volumeId", "objectStoreId", "key"]),
    );
    for (const [name, , , description] of pathNames)
      expect(description, name).toMatch(/^name: 1\.\.256 bytes of UTF-8/);
  });

  it("fills every Try it form's namespace from the Namespace box, a real value", async () => {
    expect(await page.getAttribute("#namespace", "placeholder")).toBeNull();
    const box = await page.inputValue("#namespace");
    expect(box).toBe("demo");
    const forms = () =>
      page.evaluate<string[]>(`[...document.querySelectorAll("form.try input[name=ns]")].map((i) => i.value)`);
    expect(new Set(await forms())).toEqual(new Set([box]));
    await page.fill("#namespace", "billing");
    expect(new Set(await forms())).toEqual(new Set(["billing"]));
  });

  it("sends a request from the form with the entered token and shows the answer", async () => {
    const namespace = `e2e-docs-${process.pid}`;
    const claim = `docs-${crypto.randomUUID()}`;
    const acquired = await fetch(`${inject("serverUrl")}/v1/ns/${namespace}/claims/${claim}/acquire`, {
      method: "POST",
      headers: { authorization: "Bearer dev-token", "content-type": "application/json" },
      body: JSON.stringify({ generationId: "docs-gen", ttlMs: 30_000 }),
    });
    expect(acquired.status).toBe(200);
    const doc = await openApi();
    const getClaim = doc.paths["/v1/ns/{ns}/claims/{claim}"]?.["get"]?.operationId ?? "";
    const op = `details.op[data-operation-id="${getClaim}"]`;
    await page.fill("#namespace", namespace);
    await page.click(`${op} > summary`);
    await page.fill(`${op} input[name=claim]`, claim);
    await page.click(`${op} form.try button[type=submit]`);
    await page.waitForSelector(`${op} pre.result[data-status]`);
    expect(await page.getAttribute(`${op} pre.result`, "data-status")).toBe("200");
    const shown = (await page.textContent(`${op} pre.result`)) ?? "";
    expect(shown).toContain(`"ownerGeneration": "docs-gen"`);
    expect(shown).toContain(`"fencingToken": "1"`);
    expect(errors).toEqual([]);
  });
});
