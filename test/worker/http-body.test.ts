// docs/protocol.md#wire-conventions request bodies through the real router: the 64 KiB limit at its exact boundary
// (declared and streamed), malformed JSON, byte order marks and non-JSON whitespace, unknown
// fields and wrong types as 400 naming the field, and Content-Type not consulted.
// Generation registration is the vehicle: its validation is the shared one.
import { exports } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";

// The first request loads the Worker module, which can take seconds on a busy machine.
beforeAll(async () => {
  await exports.default.fetch("http://x/healthz");
}, 60_000);

const AUTH = { Authorization: "Bearer test-write-all", "Content-Type": "application/json" };
const LIMIT = 65_536;

function path() {
  return `/v1/ns/body-${crypto.randomUUID()}/generations`;
}

/** A valid registration body padded with JSON whitespace to exactly `bytes` bytes. */
function paddedBody(bytes: number): string {
  const json = JSON.stringify({ id: crypto.randomUUID(), service: "svc", instanceId: "i-1" });
  return json + " ".repeat(bytes - json.length);
}

function post(body: BodyInit, headers: Record<string, string> = AUTH) {
  return exports.default.fetch(`http://x${path()}`, { method: "POST", headers, body });
}

/** Stream `text` in small chunks with no Content-Length. */
function streamed(text: string): ReadableStream<Uint8Array> {
  const bytes = new TextEncoder().encode(text);
  let offset = 0;
  return new ReadableStream({
    pull(controller) {
      if (offset >= bytes.length) {
        controller.close();
        return;
      }
      controller.enqueue(bytes.slice(offset, offset + 4096));
      offset += 4096;
    },
  });
}

async function expectInvalid(res: Response, field: string) {
  expect(res.status).toBe(400);
  const body = await res.json<{ error: { code: string; field: string; message: string } }>();
  expect(body.error).toMatchObject({ code: "invalid_request", field });
  return body.error.message;
}

describe("body size limit", () => {
  it("accepts exactly 65,536 bytes", async () => {
    const body = paddedBody(LIMIT);
    expect(new TextEncoder().encode(body).byteLength).toBe(LIMIT);
    expect((await post(body)).status).toBe(200);
  });

  it("refuses 65,537 bytes with 413 payload_too_large", async () => {
    const res = await post(paddedBody(LIMIT + 1));
    expect(res.status).toBe(413);
    expect(await res.json()).toMatchObject({ error: { code: "payload_too_large" } });
  });

  it("enforces the same boundary on a streamed body without Content-Length", async () => {
    expect((await post(streamed(paddedBody(LIMIT)))).status).toBe(200);
    const res = await post(streamed(paddedBody(LIMIT + 1)));
    expect(res.status).toBe(413);
    expect(await res.json()).toMatchObject({ error: { code: "payload_too_large" } });
  });

  it("counts bytes, not characters", async () => {
    // 2-byte characters inside a string field: 32,768 of them are over the limit by themselves.
    const res = await post(JSON.stringify({ id: "é".repeat(LIMIT / 2), service: "s", instanceId: "i" }));
    expect(res.status).toBe(413);
  });
});

describe("malformed bodies", () => {
  it("refuses bad JSON with field body", async () => {
    for (const text of ["{", "{'id':1}", "nul", '{"id":"a",}']) {
      await expectInvalid(await post(text), "body");
    }
  });

  it("refuses a body that is not UTF-8", async () => {
    await expectInvalid(await post(new Uint8Array([0x7b, 0xff, 0x7d])), "body");
  });

  it("refuses JSON that is not an object", async () => {
    for (const text of ["[]", "42", '"x"', "null"]) {
      const res = await post(text);
      expect(res.status, text).toBe(400);
      expect(await res.json()).toMatchObject({ error: { code: "invalid_request" } });
    }
  });

  it("names an unknown field", async () => {
    const message = await expectInvalid(
      await post(JSON.stringify({ id: "g", service: "s", instanceId: "i", instance_id: "i" })),
      "instance_id",
    );
    expect(message).toContain("instance_id");
  });

  it("names a field of the wrong type, or a missing one", async () => {
    await expectInvalid(await post(JSON.stringify({ id: 1, service: "s", instanceId: "i" })), "id");
    await expectInvalid(await post(JSON.stringify({ id: "g", service: "s" })), "instanceId");
  });

  it("treats an empty body as {} and names the first missing field", async () => {
    await expectInvalid(await post(""), "id");
    await expectInvalid(await post(" \n\t\r"), "id");
  });

  it("drops one leading byte order mark and reads the JSON after it", async () => {
    const json = JSON.stringify({ id: crypto.randomUUID(), service: "svc", instanceId: "i-1" });
    expect((await post(`\uFEFF${json}`)).status).toBe(200);
    await expectInvalid(await post(`\uFEFF\uFEFF${json}`), "body");
    await expectInvalid(await post(` \uFEFF${json}`), "body");
  });

  it("reads only JSON whitespace as an empty body: NBSP, U+2028 or a second BOM alone are invalid JSON", async () => {
    for (const text of ["\u00a0", "\u2028", "\uFEFF\uFEFF", " \uFEFF "]) {
      await expectInvalid(await post(text), "body");
    }
  });

  it("does not consult Content-Type: the body is JSON whatever it declares", async () => {
    for (const type of ["text/plain", "application/x-www-form-urlencoded", "application/xml"]) {
      const json = JSON.stringify({ id: crypto.randomUUID(), service: "svc", instanceId: "i-1" });
      expect((await post(json, { ...AUTH, "Content-Type": type })).status, type).toBe(200);
      await expectInvalid(await post("{bad", { ...AUTH, "Content-Type": type }), "body");
    }
  });
});
