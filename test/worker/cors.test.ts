// CORS (docs/protocol.md#browsers-and-cors): preflights answered without a token, every /v1 answer (errors
// included) marked for allowed origins only, retry-after exposed, credentials never allowed.
// The worker pool is configured with CORS_ORIGINS = "https://app.example, https://ops.example".
import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { allowedOrigin } from "../../src/http/cors.ts";

const claimUrl = (): string => `http://x/v1/ns/cors-${crypto.randomUUID()}/claims/c/acquire`;

function preflight(url: string, origin: string): Promise<Response> {
  return exports.default.fetch(url, {
    method: "OPTIONS",
    headers: {
      Origin: origin,
      "Access-Control-Request-Method": "POST",
      "Access-Control-Request-Headers": "authorization,content-type",
    },
  });
}

describe("CORS", () => {
  it("answers a preflight from an allowed origin with 204 and no token", async () => {
    const res = await preflight(claimUrl(), "https://app.example");
    expect(res.status).toBe(204);
    expect(res.headers.get("Access-Control-Allow-Origin")).toBe("https://app.example");
    expect(res.headers.get("Access-Control-Allow-Methods")).toContain("POST");
    expect(res.headers.get("Access-Control-Allow-Headers")).toBe("authorization, content-type");
    expect(res.headers.get("Access-Control-Allow-Credentials")).toBeNull();
  });

  it("answers a preflight on an unknown /v1 path the same way (no 401, no 404)", async () => {
    const res = await preflight("http://x/v1/ns/a/nothing/here", "https://ops.example");
    expect(res.status).toBe(204);
    expect(res.headers.get("Access-Control-Allow-Origin")).toBe("https://ops.example");
  });

  it("gives an origin that is not listed no allow-origin header, on preflights and answers", async () => {
    const pre = await preflight(claimUrl(), "https://evil.example");
    expect(pre.status).toBe(204);
    expect(pre.headers.get("Access-Control-Allow-Origin")).toBeNull();
    const res = await exports.default.fetch(claimUrl(), {
      method: "POST",
      headers: { Origin: "https://evil.example" },
    });
    expect(res.status).toBe(401);
    expect(res.headers.get("Access-Control-Allow-Origin")).toBeNull();
  });

  it("marks successes and every kind of error for an allowed origin, exposing retry-after", async () => {
    const origin = "https://app.example";
    const url = claimUrl();
    const answers = [
      await exports.default.fetch(url, { method: "POST", headers: { Origin: origin } }), // 401
      await exports.default.fetch(url, {
        method: "POST",
        headers: { Origin: origin, Authorization: "Bearer test-write-all" },
        body: "{bad",
      }), // 400
      await exports.default.fetch(url, {
        method: "POST",
        headers: { Origin: origin, Authorization: "Bearer test-write-all" },
        body: JSON.stringify({ generationId: "g", ttlMs: 1000 }),
      }), // 200
      await exports.default.fetch("http://x/v1/ns/a/nothing", {
        headers: { Origin: origin, Authorization: "Bearer test-write-all" },
      }), // 404
    ];
    expect(answers.map((r) => r.status)).toEqual([401, 400, 200, 404]);
    for (const res of answers) {
      expect(res.headers.get("Access-Control-Allow-Origin")).toBe(origin);
      expect(res.headers.get("Access-Control-Expose-Headers")).toBe("Retry-After");
      expect(res.headers.get("Access-Control-Allow-Credentials")).toBeNull();
      expect(res.headers.get("Vary")).toContain("Origin");
      await res.arrayBuffer();
    }
  });
});

describe("allowedOrigin", () => {
  it("allows every origin for *, listed ones for a list, none when unset or empty", () => {
    expect(allowedOrigin("*", "https://any.example")).toBe("*");
    expect(allowedOrigin("https://a.example,https://b.example", "https://b.example")).toBe("https://b.example");
    expect(allowedOrigin("https://a.example", "https://a.example.evil")).toBeUndefined();
    expect(allowedOrigin(undefined, "https://a.example")).toBeUndefined();
    expect(allowedOrigin("", "https://a.example")).toBeUndefined();
    expect(allowedOrigin("*", undefined)).toBeUndefined();
  });
});
