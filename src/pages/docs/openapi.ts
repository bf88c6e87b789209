/**
 * The part of an OpenAPI 3.1 document the /docs page reads, and the two readings it needs:
 * `$ref` resolution and the error codes of one response.
 *
 * Guarantees: `resolve` follows local `#/…` references (cycles and depth bounded) without
 * changing the document; `responseCodes` lists the codes a response declares for its route
 * — the narrowing each response adds to the shared `Error` envelope (src/http/openapi.ts),
 * not the envelope's list of every code. Does not: fetch anything.
 */

/** A JSON value of the document. */
export type Json = string | number | boolean | null | Json[] | { [key: string]: Json };
export type JsonObject = { [key: string]: Json };

export interface Parameter {
  name: string;
  in: string;
  required?: boolean;
  /** What it is and its limits (a name's: 1..256 bytes of UTF-8). */
  description?: string;
  schema?: Json;
}

export interface Operation {
  operationId: string;
  summary?: string;
  description?: string;
  tags?: string[];
  parameters?: Parameter[];
  requestBody?: { content: { "application/json": { schema: Json } } };
  responses: Record<string, JsonObject>;
  "x-shiftlock-role"?: string;
  "x-websocket"?: Json;
}

export interface OpenApiDocument {
  info: { title: string; version: string; description?: string };
  tags?: { name: string; description?: string }[];
  paths: Record<string, Record<string, Operation>>;
  components?: JsonObject;
}

function isObject(node: Json | undefined): node is JsonObject {
  return typeof node === "object" && node !== null && !Array.isArray(node);
}

/** The value under `keys` (through objects only), or undefined. */
export function at(node: Json | undefined, ...keys: string[]): Json | undefined {
  let found = node;
  for (const key of keys) found = isObject(found) ? found[key] : undefined;
  return found;
}

/** What a local reference (`#/components/…`) points at. */
function target(doc: OpenApiDocument, ref: string): Json | undefined {
  return at(doc as unknown as Json, ...ref.replace(/^#\//, "").split("/"));
}

/** `node` with every reference replaced by what it points at (a cycle is left as its `$ref`). */
export function resolve(doc: OpenApiDocument, node: Json | undefined, depth = 0, seen: readonly string[] = []): Json {
  if (node === undefined) return null;
  if (depth > 12 || node === null || typeof node !== "object") return node;
  if (Array.isArray(node)) return node.map((x) => resolve(doc, x, depth + 1, seen));
  const ref = node["$ref"];
  if (typeof ref === "string") {
    if (seen.includes(ref)) return { $ref: ref };
    return resolve(doc, target(doc, ref), depth + 1, [...seen, ref]);
  }
  return Object.fromEntries(Object.entries(node).map(([k, v]) => [k, resolve(doc, v, depth + 1, seen)]));
}

/** The response itself (a shared one is a `$ref` into `components/responses`). */
export function responseObject(doc: OpenApiDocument, response: JsonObject): JsonObject {
  const ref = response["$ref"];
  const found = typeof ref === "string" ? target(doc, ref) : response;
  return isObject(found) ? found : {};
}

/**
 * The error codes `response` declares: the `code` enums written in the response itself.
 * Schema references are not followed: the one they lead to, `Error`, lists every code.
 */
export function responseCodes(doc: OpenApiDocument, response: JsonObject): string[] {
  const found = new Set<string>();
  const walk = (node: Json | undefined): void => {
    if (Array.isArray(node)) return node.forEach(walk);
    if (!isObject(node)) return;
    const properties = node["properties"];
    const code = isObject(properties) ? properties["code"] : undefined;
    if (isObject(code)) {
      const values = code["enum"];
      if (Array.isArray(values)) for (const v of values) if (typeof v === "string") found.add(v);
      if (typeof code["const"] === "string") found.add(code["const"]);
    }
    for (const [key, value] of Object.entries(node)) if (key !== "$ref") walk(value);
  };
  walk(responseObject(doc, response)["content"]);
  return [...found];
}
