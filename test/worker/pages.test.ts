// The pages the Worker serves itself (docs/protocol.md#pages): they load without a token, come with
// a Content-Security-Policy that allows only same-origin code, and are not API routes.
import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";

describe("GET /docs and GET /ui", () => {
  it("serves each page, its script and stylesheet without a token, under a same-origin CSP", async () => {
    for (const [path, type] of [
      ["/docs", "text/html"],
      ["/docs/app.js", "text/javascript"],
      ["/docs/app.css", "text/css"],
      ["/docs/", "text/html"],
      ["/ui", "text/html"],
      ["/ui/", "text/html"],
      ["/ui/app.js", "text/javascript"],
      ["/ui/app.css", "text/css"],
    ] as const) {
      const res = await exports.default.fetch(`http://x${path}`);
      expect(res.status, path).toBe(200);
      expect(res.headers.get("content-type")).toContain(type);
      const csp = res.headers.get("content-security-policy") ?? "";
      expect(csp).toContain("script-src 'self'");
      expect(csp).toContain("connect-src 'self'");
      expect(csp).not.toContain("unsafe-inline");
      expect(res.headers.get("x-content-type-options")).toBe("nosniff");
    }
  });

  it("loads no script or style from another origin and renders from /openapi.json", async () => {
    for (const page of ["docs", "ui"]) {
      const html = await (await exports.default.fetch(`http://x/${page}`)).text();
      expect(html).not.toMatch(/(src|href)="(https?:)?\/\//);
      expect(html).not.toMatch(/ on[a-z]+="/);
      expect(html).toContain(`src="/${page}/app.js"`);
    }
    const script = await (await exports.default.fetch("http://x/docs/app.js")).text();
    expect(script).toContain('fetch("/openapi.json")');
    expect(script).not.toContain("innerHTML");
  });

  it("redirects / to the dashboard", async () => {
    const res = await exports.default.fetch("http://x/", { redirect: "manual" });
    expect(res.status).toBe(302);
    expect(res.headers.get("location")).toBe("/ui");
  });

  it("is not part of the API document", async () => {
    const res = await exports.default.fetch("http://x/openapi.json");
    const doc: { paths: object } = await res.json();
    expect(Object.keys(doc.paths).filter((p) => p.startsWith("/docs"))).toEqual([]);
  });
});
