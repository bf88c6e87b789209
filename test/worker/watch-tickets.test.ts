/* eslint-disable @typescript-eslint/no-unsafe-return -- JSON bodies under test are inspected loosely. */
// Watch tickets (docs/protocol.md#watch-tickets): issued to a read token for one watch path,
// they open exactly one upgrade of that path without a bearer token, and nothing else.
import { env, exports } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { signTicket, verifyTicket } from "../../src/http/watch-tickets.ts";
import { WATCH_TICKET_TTL_MS } from "../../src/protocol/watch-ticket-routes.ts";
import { READ, claimUrl, get, post, unique } from "./claims-helpers.ts";
import { uniqueScope } from "./coord-helpers.ts";

beforeAll(async () => {
  await exports.default.fetch("http://x/healthz");
}, 60_000);

function ticketsUrl(ns: string): string {
  return `http://x/v1/ns/${encodeURIComponent(ns)}/watch-tickets`;
}

/** Ask for a ticket for `path` with `token`; the answer's body. */
async function issue(ns: string, path: string, token = READ): Promise<{ ticket: string; expiresAtMs: number }> {
  const res = await post(ticketsUrl(ns), { path }, token);
  expect(res.status).toBe(201);
  return res.body;
}

/** An upgrade of `url` carrying only the ticket (no Authorization, no subprotocol). */
function upgradeWithTicket(url: string, ticket: string): Promise<Response> {
  const u = new URL(url);
  u.searchParams.set("ticket", ticket);
  return exports.default.fetch(u.toString(), { headers: { Upgrade: "websocket" } });
}

function accepted(res: Response): void {
  expect(res.status).toBe(101);
  expect(res.headers.get("Sec-WebSocket-Protocol")).toBeNull();
  res.webSocket!.accept();
  res.webSocket!.close(1000);
}

describe("watch tickets", () => {
  it("a read token's ticket opens its claim watch once; the second use is 401", async () => {
    const ns = unique("ns");
    const claim = "job/a b";
    const path = new URL(claimUrl(ns, claim, "/watch")).pathname;
    const before = Date.now();
    const { ticket, expiresAtMs } = await issue(ns, path);
    expect(expiresAtMs).toBeGreaterThanOrEqual(before + WATCH_TICKET_TTL_MS);
    expect(ticket).not.toContain(READ);
    accepted(await upgradeWithTicket(`${claimUrl(ns, claim, "/watch")}?afterVersion=0`, ticket));
    const again = await upgradeWithTicket(claimUrl(ns, claim, "/watch"), ticket);
    expect(again.status).toBe(401);
    expect(await again.json()).toMatchObject({ error: { code: "unauthorized" } });
  });

  it("opens a scope watch, with its resume query", async () => {
    const scope = uniqueScope();
    const { ticket } = await issue(scope.ns, new URL(`${scope.url}/watch`).pathname);
    accepted(await upgradeWithTicket(`${scope.url}/watch?afterGeneration=0`, ticket));
  });

  it("is refused (401) for another path, without an upgrade, on any other route, or altered", async () => {
    const ns = unique("ns");
    const path = new URL(claimUrl(ns, "a", "/watch")).pathname;
    const { ticket } = await issue(ns, path);
    expect((await upgradeWithTicket(claimUrl(ns, "b", "/watch"), ticket)).status).toBe(401);
    const plain = await exports.default.fetch(`${claimUrl(ns, "a", "/watch")}?ticket=${ticket}`);
    expect(plain.status).toBe(401);
    expect((await get(`${claimUrl(ns, "a")}?ticket=${ticket}`, null)).status).toBe(401);
    const [version, body, mac] = ticket.split(".");
    const flipped = `${version}.${body}.${mac!.startsWith("A") ? "B" : "A"}${mac!.slice(1)}`;
    expect((await upgradeWithTicket(claimUrl(ns, "a", "/watch"), flipped)).status).toBe(401);
    expect((await upgradeWithTicket(claimUrl(ns, "a", "/watch"), "v1.e30.AAAA")).status).toBe(401);
    // The untouched ticket still works: the refusals above did not use it up.
    accepted(await upgradeWithTicket(claimUrl(ns, "a", "/watch"), ticket));
  });

  it("is only issued for a watch path of the token's namespace", async () => {
    const ns = unique("ns");
    const notWatch = await post(ticketsUrl(ns), { path: new URL(claimUrl(ns, "a")).pathname }, READ);
    expect(notWatch.status).toBe(400);
    expect(notWatch.body).toMatchObject({ error: { code: "invalid_request", field: "path" } });
    const otherNs = await post(ticketsUrl(ns), { path: new URL(claimUrl("other", "a", "/watch")).pathname }, READ);
    expect(otherNs.status).toBe(400);
    const withQuery = await post(ticketsUrl(ns), { path: `${new URL(claimUrl(ns, "a", "/watch")).pathname}?x=1` });
    expect(withQuery.status).toBe(400);
    const forbidden = await post(
      ticketsUrl("beta"),
      { path: new URL(claimUrl("beta", "a", "/watch")).pathname },
      "test-write-alpha",
    );
    expect(forbidden.status).toBe(403);
    expect((await post(ticketsUrl(ns), { path: "/x" }, null)).status).toBe(401);
  });

  it("carries the issuing token's role and name, and expires after its lifetime", async () => {
    const path = "/v1/ns/n/claims/c/watch";
    const issued = await signTicket(env, { role: "read", namespaces: "*", name: "ops" }, "n", path, 1_000);
    const use = await verifyTicket(env, issued.ticket, path, 1_000 + WATCH_TICKET_TTL_MS - 1);
    expect(use.grant).toEqual({ role: "read", namespaces: ["n"], name: "ops" });
    expect(use.expiresAtMs).toBe(1_000 + WATCH_TICKET_TTL_MS);
    await expect(verifyTicket(env, issued.ticket, path, 1_000 + WATCH_TICKET_TTL_MS)).rejects.toMatchObject({
      code: "unauthorized",
    });
  });

  it("is signed with WATCH_TICKET_KEY when set: a ticket under another key is refused", async () => {
    const path = "/v1/ns/n/claims/c/watch";
    const keyed = { ...env, WATCH_TICKET_KEY: "k".repeat(32) };
    const issued = await signTicket(keyed, { role: "read", name: "reader", namespaces: "*" }, "n", path, 1_000);
    await expect(verifyTicket(keyed, issued.ticket, path, 2_000)).resolves.toMatchObject({ id: expect.any(String) });
    await expect(verifyTicket(env, issued.ticket, path, 2_000)).rejects.toMatchObject({ code: "unauthorized" });
    await expect(
      signTicket(
        { ...env, WATCH_TICKET_KEY: "short" },
        { role: "read", name: "reader", namespaces: "*" },
        "n",
        path,
        1_000,
      ),
    ).rejects.toMatchObject({ code: "internal" });
  });
});
