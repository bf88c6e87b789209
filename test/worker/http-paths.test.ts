// docs/protocol.md#wire-conventions names in paths and the error envelope: percent-encoding, control characters and
// the 256-byte limit are 400 naming the parameter; unknown routes are the 404 envelope;
// /healthz needs no auth.
import { exports } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { DOT_SEGMENT_MARK } from "../../src/serve/dot-segments.ts";

// The first request loads the Worker module, which can take seconds on a busy machine.
beforeAll(async () => {
  await exports.default.fetch("http://x/healthz");
}, 60_000);

const AUTH = { Authorization: "Bearer test-write-all" };

function get(path: string, headers: Record<string, string> = AUTH) {
  return exports.default.fetch(`http://x${path}`, { headers });
}

async function expectInvalid(res: Response, field: string) {
  expect(res.status).toBe(400);
  expect(await res.json()).toMatchObject({ error: { code: "invalid_request", field } });
}

describe("percent-encoding", () => {
  // %ED%A0%80 would be a lone surrogate, which has no UTF-8 form.
  it.each(["%ZZ", "%E0%A4%A", "%FF", "abc%", "%C3%28", "%ED%A0%80"])(
    "refuses the malformed segment %s",
    async (segment) => {
      await expectInvalid(await get(`/v1/ns/paths/generations/${segment}`), "path");
      await expectInvalid(await get(`/v1/ns/${segment}/generations/g`), "path");
    },
  );

  it("refuses the local front's dot-segment mark as any malformed segment, quoting it, with CORS headers", async () => {
    // `npm start`'s front puts DOT_SEGMENT_MARK where the caller sent `.` or `..` (which the
    // runtime would resolve, reaching another route). The Worker knows nothing of the mark:
    // it is not valid percent-encoding, and the refusal quotes it, which says what it was.
    for (const path of [
      `/v1/ns/paths/generations/${DOT_SEGMENT_MARK}`,
      `/v1/ns/paths/volumes/v/stores/s/keys/${DOT_SEGMENT_MARK}/capability`,
    ]) {
      const res = await get(path, { ...AUTH, Origin: "https://app.example" });
      expect(res.status, path).toBe(400);
      expect(res.headers.get("Access-Control-Allow-Origin")).toBe("https://app.example");
      expect(await res.json()).toEqual({
        error: {
          code: "invalid_request",
          field: "path",
          message: `path segment "${DOT_SEGMENT_MARK}" is not valid percent-encoded UTF-8`,
        },
      });
    }
  });

  it("decodes %2F into a name instead of a path separator", async () => {
    const ns = `paths-${crypto.randomUUID()}`;
    const id = `a/b/${crypto.randomUUID()}`;
    const body = JSON.stringify({ id, service: "s", instanceId: "i" });
    const created = await exports.default.fetch(`http://x/v1/ns/${ns}/generations`, {
      method: "POST",
      headers: AUTH,
      body,
    });
    expect(created.status).toBe(200);
    const res = await get(`/v1/ns/${ns}/generations/${encodeURIComponent(id)}`);
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ generation: { id } });
  });
});

describe("names in paths", () => {
  it.each([
    ["NUL", "%00"],
    ["BEL", "a%07b"],
    ["newline", "a%0Ab"],
    ["DEL", "a%7Fb"],
    ["C1 control", "a%C2%85b"],
  ])("refuses a %s in a name, naming the parameter", async (_what, encoded) => {
    await expectInvalid(await get(`/v1/ns/paths/generations/${encoded}`), "id");
    await expectInvalid(await get(`/v1/ns/${encoded}/generations/g`), "ns");
  });

  it("accepts 256 bytes of UTF-8 and refuses 257", async () => {
    const ns = `paths-${crypto.randomUUID()}`;
    const ok256 = encodeURIComponent("é".repeat(128));
    const ok256ascii = "a".repeat(256);
    expect((await get(`/v1/ns/${ns}/generations/${ok256}`)).status).toBe(404);
    expect((await get(`/v1/ns/${ns}/generations/${ok256ascii}`)).status).toBe(404);
    await expectInvalid(await get(`/v1/ns/${ns}/generations/${ok256ascii}b`), "id");
    await expectInvalid(await get(`/v1/ns/${ns}/generations/${encodeURIComponent("é".repeat(128) + "b")}`), "id");
    await expectInvalid(await get(`/v1/ns/${"n".repeat(257)}/generations/g`), "ns");
  });

  it("names the body field for a bad name in a body", async () => {
    const res = await exports.default.fetch(`http://x/v1/ns/paths/generations`, {
      method: "POST",
      headers: AUTH,
      body: JSON.stringify({ id: "ok", service: "s\u0000", instanceId: "i" }),
    });
    await expectInvalid(res, "service");
  });
});

describe("envelope and unauthenticated routes", () => {
  it("answers unknown routes and methods with the 404 not_found envelope", async () => {
    for (const [method, path] of [
      ["GET", "/nope"],
      ["GET", "/v1/nope"],
      ["GET", "/v1/ns/paths/nope"],
      ["PUT", "/v1/ns/paths/generations/g"],
      ["DELETE", "/v1/ns/paths/generations/g"],
      // GET /v1/ns/{ns}/generations is the listing route (docs/protocol.md#listing); other methods are not routes.
      ["PUT", "/v1/ns/paths/generations"],
      ["DELETE", "/v1/ns/paths/claims"],
    ] as const) {
      const res = await exports.default.fetch(`http://x${path}`, { method, headers: AUTH });
      expect(res.status, `${method} ${path}`).toBe(404);
      const body = await res.json<{ error: { code: string; message: string } }>();
      expect(body.error.code).toBe("not_found");
      expect(body.error.message).toContain(path);
    }
  });

  it("serves /healthz without auth, and ignores a bad token there", async () => {
    for (const headers of [{}, { Authorization: "Bearer not-a-token" }]) {
      const res = await get("/healthz", headers);
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({ ok: true });
    }
  });

  it("serves /openapi.json without auth", async () => {
    const res = await get("/openapi.json", {});
    expect(res.status).toBe(200);
    expect(res.headers.get("Content-Type")).toMatch(/^application\/json/);
  });
});
