// GET /openapi.json: valid JSON describing every route the Worker serves (and nothing it
// does not), with the bearer scheme, resolvable references and per-route error codes.
import { exports } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { app } from "../../src/http/app.ts";
import { PAGE_PATHS } from "../../src/http/pages.ts";

interface Operation {
  operationId: string;
  security?: unknown[];
  requestBody?: { content: Record<string, { schema: { $ref: string } }> };
  responses: Record<string, { $ref?: string; description?: string }>;
  parameters: { name: string; in: string; required: boolean }[];
  "x-websocket"?: unknown;
}
interface Doc {
  openapi: string;
  security: unknown[];
  paths: Record<string, Record<string, Operation>>;
  components: {
    schemas: Record<string, Record<string, unknown>>;
    responses: Record<string, unknown>;
    securitySchemes: Record<string, { type: string; scheme: string }>;
  };
}

let doc: Doc;

beforeAll(async () => {
  const res = await exports.default.fetch("http://x/openapi.json");
  expect(res.status).toBe(200);
  expect(res.headers.get("Content-Type")).toMatch(/^application\/json/);
  doc = JSON.parse(await res.text()) as Doc;
}, 60_000);

/** `/v1/ns/:ns/claims/:claim{.+}` and `/v1/ns/{ns}/claims/{claim}` both become `/v1/ns/{}/claims/{}`. */
function shape(path: string): string {
  return path
    .replace(/:[A-Za-z0-9_]+(\{[^}]*\})?/g, "{}")
    .replace(/\{[A-Za-z0-9_]+\}/g, "{}")
    .replace(/\/$/, "");
}

function served(): Set<string> {
  const out = new Set<string>();
  for (const route of app.routes) {
    if (route.method === "ALL") continue; // middleware
    if (PAGE_PATHS.includes(route.path)) continue; // pages, not API operations (pages.test.ts)
    out.add(`${route.method.toLowerCase()} ${shape(route.path)}`);
  }
  return out;
}

function documented(): Set<string> {
  const out = new Set<string>();
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const method of Object.keys(item)) out.add(`${method} ${shape(path)}`);
  }
  return out;
}

describe("GET /openapi.json", () => {
  it("is an OpenAPI 3.1 document with the bearer scheme", () => {
    expect(doc.openapi).toBe("3.1.0");
    expect(doc.components.securitySchemes["bearerAuth"]).toMatchObject({ type: "http", scheme: "bearer" });
    expect(doc.security).toEqual([{ bearerAuth: [] }]);
  });

  it("describes every route the Worker serves", () => {
    const missing = [...served()].filter((r) => !documented().has(r));
    expect(missing).toEqual([]);
    // 3 meta (health, openapi, whoami) + 9 claims (evict included) + batch + 6 generations
    // (keepalive, lease end and the lease channel included) + 9 coord routes (evict included)
    // under each of 3 scope prefixes + 3 lists and stats + watch tickets.
    expect(served().size).toBe(51);
  });

  it("describes no route the Worker does not serve", () => {
    const extra = [...documented()].filter((r) => !served().has(r));
    expect(extra).toEqual([]);
  });

  it("has the protocol's paths", () => {
    const scope = "/v1/ns/{ns}/volumes/{volumeId}/stores/{objectStoreId}";
    const expected: [string, string][] = [
      ["get", "/healthz"],
      ["get", "/openapi.json"],
      ["post", "/v1/ns/{ns}/claims/{claim}/acquire"],
      ["post", "/v1/ns/{ns}/claims/{claim}/renew"],
      ["post", "/v1/ns/{ns}/claims/{claim}/transfer/prepare"],
      ["post", "/v1/ns/{ns}/claims/{claim}/transfer/commit"],
      ["post", "/v1/ns/{ns}/claims/{claim}/transfer/abort"],
      ["post", "/v1/ns/{ns}/claims/{claim}/release"],
      ["get", "/v1/ns/{ns}/claims/{claim}"],
      ["get", "/v1/ns/{ns}/claims/{claim}/watch"],
      ["post", "/v1/ns/{ns}/generations"],
      ["get", "/v1/ns/{ns}/generations/{id}"],
      ["patch", "/v1/ns/{ns}/generations/{id}"],
      ["get", `${scope}/capability`],
      ["get", `${scope}/snapshot`],
      ["post", `${scope}/leases`],
      ["post", `${scope}/leases/{leaseId}/keepalive`],
      ["post", `${scope}/leases/{leaseId}/refresh`],
      ["post", `${scope}/leases/{leaseId}/publish`],
      ["delete", `${scope}/leases/{leaseId}`],
      ["get", `${scope}/watch`],
      ["post", "/v1/ns/{ns}/volumes/{volumeId}/keys/{key}/leases"],
      ["post", `${scope}/keys/{key}/leases`],
    ];
    for (const [method, path] of expected) expect(doc.paths[path]?.[method], `${method} ${path}`).toBeDefined();
  });

  it("resolves every $ref", () => {
    const refs = JSON.stringify(doc).match(/"\$ref":"[^"]+"/g) ?? [];
    expect(refs.length).toBeGreaterThan(50);
    for (const ref of new Set(refs)) {
      const target = /"\$ref":"#\/components\/(schemas|responses)\/([^"]+)"/.exec(ref);
      expect(target, ref).not.toBeNull();
      const [, kind, name] = target!;
      expect(doc.components[kind as "schemas" | "responses"][name!], ref).toBeDefined();
    }
  });

  it("gives every /v1 operation auth errors, a role and unique operation ids", () => {
    const ids = new Set<string>();
    for (const [path, item] of Object.entries(doc.paths)) {
      for (const op of Object.values(item)) {
        expect(ids.has(op.operationId), op.operationId).toBe(false);
        ids.add(op.operationId);
        if (!path.startsWith("/v1/")) {
          expect(op.security).toEqual([]);
          continue;
        }
        expect(op.responses["401"]?.$ref).toBe("#/components/responses/unauthorized");
        expect(op.responses["403"]?.$ref).toBe("#/components/responses/forbidden");
        expect(op.responses["400"]).toBeDefined();
        for (const name of path.matchAll(/\{([^}]+)\}/g)) {
          expect(op.parameters.some((p) => p.in === "path" && p.name === name[1] && p.required)).toBe(true);
        }
      }
    }
  });

  it("lists route-specific codes and statuses", () => {
    const scope = "/v1/ns/{ns}/volumes/{volumeId}/stores/{objectStoreId}";
    const register = doc.paths["/v1/ns/{ns}/generations"]!["post"]!;
    expect(register.responses["200"]).toBeDefined();
    expect(register.responses["409"]?.description).toContain("generation_exists");
    expect(register.responses["413"]?.$ref).toBe("#/components/responses/payload_too_large");
    const patch = doc.paths["/v1/ns/{ns}/generations/{id}"]!["patch"]!;
    expect(patch.responses["409"]?.description).toContain("invalid_state");
    expect(patch.responses["404"]?.description).toContain("generation_not_found");
    const commit = doc.paths["/v1/ns/{ns}/claims/{claim}/transfer/commit"]!["post"]!;
    for (const code of [
      "no_transfer",
      "concurrent_transfer",
      "stale_token",
      "token_overflow",
      "operation_id_conflict",
    ]) {
      expect(commit.responses["409"]?.description).toContain(code);
    }
    expect(doc.paths[`${scope}/leases`]!["post"]!.responses["201"]).toBeDefined();
    expect(doc.paths[`${scope}/leases/{leaseId}`]!["delete"]!.responses["204"]).toBeDefined();
    expect(doc.paths[`${scope}/leases/{leaseId}/publish`]!["post"]!.responses["410"]?.description).toContain(
      "lease_lost",
    );
    const watch = doc.paths["/v1/ns/{ns}/claims/{claim}/watch"]!["get"]!;
    expect(watch.responses["101"]).toBeDefined();
    expect(watch["x-websocket"]).toBeDefined();
    expect(watch.parameters.some((p) => p.in === "query" && p.name === "afterVersion" && !p.required)).toBe(true);
    const keyedSnapshot = doc.paths["/v1/ns/{ns}/volumes/{volumeId}/keys/{key}/snapshot"]!["get"]!;
    expect(keyedSnapshot.responses["400"]?.description).toContain("unsupported");
  });

  it("describes request bodies with the validating schemas (unknown fields rejected)", () => {
    const register = doc.components.schemas["RegisterGenerationBody"]!;
    expect(register).toMatchObject({
      type: "object",
      required: ["id", "service", "instanceId"],
      additionalProperties: false,
    });
    const renew = doc.components.schemas["RenewClaimBody"] as { properties: Record<string, { pattern?: string }> };
    expect(new RegExp(renew.properties["token"]!.pattern!).test("007")).toBe(false);
    expect(new RegExp(renew.properties["token"]!.pattern!).test("42")).toBe(true);
    expect(doc.components.schemas["GenerationRecord"]).toMatchObject({
      required: ["id", "service", "instanceId", "state", "startedAtMs", "updatedAtMs", "reason"],
    });
  });
});
