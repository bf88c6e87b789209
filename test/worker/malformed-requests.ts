// Malformed requests generated from a route's declaration (src/protocol/route.ts), as
// fast-check arbitraries, and the oracle that says what docs/protocol.md#wire-conventions answers each of them.
//
// A recipe breaks one part of an otherwise well-formed request: a body field (wrong type,
// NaN, huge or negative numbers, deep nesting, lone surrogates, control characters, `.` and
// `..`, over-long names, non-canonical counters, prototype-polluting objects), an extra
// field (`__proto__`, `constructor`, …), the whole body (broken or truncated JSON, JSON that
// is not an object, BOMs, bytes that are not UTF-8, bodies just over 64 KiB), a path
// parameter (bad percent-encoding, dot segments, control characters, over 256 bytes, random
// strings), or the query string (unknown, duplicated or mistyped parameters). Which parts
// exist comes from the declaration: its path parameters, its body schema's fields, its
// query schema's keys. The content type is drawn too: the server does not consult it.
//
// The oracle decides from the protocol's rules alone (body ≤ 64 KiB of UTF-8 JSON, one leading
// BOM dropped by decoding, empty = `{}`, the declared zod schemas, the name rules, URL
// dot-segment resolution) whether a request is malformed and which codes it may answer; a
// recipe can come out well-formed (a random string that is a valid name), and the oracle
// says so instead of the test assuming otherwise.
import fc from "fast-check";
import type { ErrorCode } from "../../src/protocol/errors.ts";
import { nameProblem } from "../../src/protocol/names.ts";
import type { RouteSpec } from "../../src/protocol/route.ts";
import { pathParamNames } from "../../src/protocol/route.ts";
import { ROUTES } from "../../src/protocol/routes.ts";
import type { World } from "./route-world.ts";
import { bodySchema, worldBody, worldParams } from "./route-world.ts";

/** The body limit of docs/protocol.md#wire-conventions (65,536 bytes accepted, one more refused). */
const BODY_LIMIT = 65_536;

export type Recipe =
  | { target: "field"; field: string; json: string; contentType: ContentType }
  | { target: "extra-field"; key: string; json: string; contentType: ContentType }
  | { target: "raw-body"; text: string; contentType: ContentType }
  | { target: "bytes"; at: number; bytes: readonly number[]; contentType: ContentType }
  | { target: "padded"; size: number; contentType: ContentType }
  | { target: "truncated"; at: number; contentType: ContentType }
  | { target: "param"; name: string; segment: string }
  | { target: "query"; pairs: [string, string][] };

type ContentType = string | null;

/**
 * What a request must answer: a refusal with one of `codes`, or (well-formed) anything its
 * route declares — `route` when the runtime's dot-segment resolution made it another route's path.
 */
export type Expectation = { malformed: true; codes: ReadonlySet<ErrorCode> } | { malformed: false; route?: RouteSpec };

export interface BuiltRequest {
  method: string;
  /** Path and query, exactly as sent (raw percent-encoding kept). */
  target: string;
  headers: Record<string, string>;
  body: Uint8Array | undefined;
  expect: Expectation;
  /** The decoded body when well-formed (the test skips a long coord wait). */
  decoded: unknown;
}

const CONTENT_TYPES: readonly ContentType[] = [
  "application/json",
  null,
  "text/plain",
  "application/x-www-form-urlencoded",
  "multipart/form-data; boundary=x",
  "application/json; charset=utf-16",
  "application/xml",
];

/** JSON texts (some of them not JSON at all) that break a field of almost any type. */
const ADVERSARIAL_JSON = [
  "null",
  "true",
  "0",
  "-0",
  "-1",
  "1.5",
  "1e309",
  "-1e309",
  "1e-400",
  "9007199254740993",
  "18446744073709551616",
  "NaN",
  "Infinity",
  "undefined",
  "[]",
  "{}",
  '""',
  '"."',
  '".."',
  '"\\u0000"',
  '"a\\u0007b"',
  '"\\u007f"',
  '"\\u0085"',
  '"\\ud800"',
  '"x\\udfffy"',
  '"\\ufeff"',
  '"0x1"',
  '"007"',
  '"-1"',
  '"1.0"',
  '" 1"',
  '"1e3"',
  '"NaN"',
  '"18446744073709551616"',
  '"18446744073709551615"',
  '"%2F"',
  '{"__proto__":{"polluted":true}}',
  '{"constructor":{"prototype":{"polluted":true}}}',
  `"${"a".repeat(257)}"`,
  `"${"€".repeat(86)}"`,
];

/** JSON texts nested `depth` deep: arrays, or objects under a `__proto__` key. */
const deepJson = fc
  .tuple(fc.integer({ min: 1, max: 5_000 }), fc.boolean())
  .map(([depth, objects]) =>
    objects ? '{"__proto__":'.repeat(depth) + "1" + "}".repeat(depth) : "[".repeat(depth) + "]".repeat(depth),
  );

const adversarialJson: fc.Arbitrary<string> = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(...ADVERSARIAL_JSON) },
  { weight: 1, arbitrary: deepJson },
  { weight: 1, arbitrary: fc.integer({ min: 250, max: 5_000 }).map((n) => JSON.stringify("é".repeat(n))) },
  { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 4 }).map((v) => JSON.stringify(v)) },
  { weight: 1, arbitrary: fc.string({ unit: "binary", maxLength: 40 }).map((s) => JSON.stringify(s)) },
  { weight: 1, arbitrary: fc.double().map((d) => String(d)) },
  { weight: 1, arbitrary: fc.bigInt().map((b) => String(b)) },
);

const extraKey = fc.oneof(
  fc.constantFrom("__proto__", "constructor", "prototype", "toString", "hasOwnProperty", "", "\u0000", "op", "x"),
  fc.string({ unit: "binary", maxLength: 20 }),
);

/** Whole bodies: broken JSON, JSON that is not an object, BOMs, whitespace. */
const rawBody = fc.oneof(
  fc.constantFrom(
    "",
    " ",
    "\n\t",
    "{",
    "}",
    "[",
    '{"a":}',
    "nul",
    "{}{}",
    "{} x",
    "null",
    "1",
    '"x"',
    "[]",
    "true",
    "[{}]",
    "\uFEFF",
    "\uFEFF{}",
    "\uFEFF\uFEFF{}",
    " \uFEFF{}",
    "{}\uFEFF",
    "\u00a0{}",
    '{"a":1,"a":2}',
    "{'a':1}",
    "{a:1}",
    "/* */{}",
  ),
  fc.string({ unit: "binary", maxLength: 200 }),
);

/** Byte sequences that are not UTF-8 (lone continuation, overlong, surrogate, truncated, UTF-16 BOM). */
const invalidUtf8 = fc.constantFrom(
  [0xff],
  [0x80],
  [0xc3, 0x28],
  [0xc0, 0xaf],
  [0xed, 0xa0, 0x80],
  [0xf4, 0x90, 0x80, 0x80],
  [0xe2, 0x82],
  [0xff, 0xfe],
  [0xfe, 0xff],
);

/** Percent-encode a string as WTF-8, so lone surrogates travel as their (invalid) 3-byte forms. */
function wtf8Encode(text: string): string {
  let out = "";
  for (const ch of text) {
    const code = ch.codePointAt(0)!;
    if (code >= 0xd800 && code <= 0xdfff) {
      out += [0xe0 | (code >> 12), 0x80 | ((code >> 6) & 0x3f), 0x80 | (code & 0x3f)]
        .map((b) => `%${b.toString(16).toUpperCase()}`)
        .join("");
    } else {
      out += encodeURIComponent(ch);
    }
  }
  return out;
}

/** Raw path segments: broken encodings, dot segments, control characters, lengths, random text. */
const segment = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.constantFrom(
      "",
      ".",
      "..",
      "%2e",
      "%2E%2e",
      "%ZZ",
      "%",
      "%E0%A4%A",
      "%ED%A0%80",
      "%C0%AF",
      "%FF",
      "%00",
      "%07",
      "%0A",
      "%7F",
      "%C2%80",
      "%C2%9F",
      "a%00b",
      "a".repeat(257),
      "%E2%82%AC".repeat(86),
      "%EF%BB%BF",
    ),
  },
  { weight: 1, arbitrary: fc.string({ unit: "binary", maxLength: 300 }).map(wtf8Encode) },
);

const queryValue = fc.oneof(
  fc.constantFrom("", "NaN", "-1", "0x1", "1e3", "1.0", "007", "+1", " 1", "18446744073709551616", "%ZZ", "%00", "0"),
  fc.string({ unit: "binary", maxLength: 30 }).map(wtf8Encode),
);

/** Every recipe that applies to `route`, by what its declaration has. */
export function recipes(route: RouteSpec): fc.Arbitrary<Recipe> {
  const options: fc.Arbitrary<Recipe>[] = [];
  const contentType = fc.constantFrom(...CONTENT_TYPES);
  const schema = bodySchema(route);
  if (schema !== undefined) {
    const fields = Object.keys(schema.properties ?? {});
    if (fields.length > 0) {
      options.push(
        fc.record({
          target: fc.constant("field" as const),
          field: fc.constantFrom(...fields),
          json: adversarialJson,
          contentType,
        }),
      );
    }
    options.push(
      fc.record({ target: fc.constant("extra-field" as const), key: extraKey, json: adversarialJson, contentType }),
      fc.record({ target: fc.constant("raw-body" as const), text: rawBody, contentType }),
      fc.record({ target: fc.constant("bytes" as const), at: fc.nat(), bytes: invalidUtf8, contentType }),
      fc.record({
        target: fc.constant("padded" as const),
        size: fc.constantFrom(BODY_LIMIT + 1, 100_000),
        contentType,
      }),
      fc.record({ target: fc.constant("truncated" as const), at: fc.nat(), contentType }),
    );
  }
  const names = pathParamNames(route.path).filter((name) => route.opaqueParams?.includes(name) !== true);
  if (names.length > 0) {
    options.push(fc.record({ target: fc.constant("param" as const), name: fc.constantFrom(...names), segment }));
  }
  if (route.query !== undefined) {
    const declared = Object.keys(route.query.shape);
    const key = fc.oneof(
      fc.constantFrom(...declared, "__proto__", "constructor", "hasOwnProperty", "x", ""),
      fc.string({ maxLength: 10 }).map(wtf8Encode),
    );
    options.push(
      fc.record({
        target: fc.constant("query" as const),
        pairs: fc.array(fc.tuple(key, queryValue), { minLength: 1, maxLength: 4 }),
      }),
    );
  }
  return fc.oneof(...options);
}

const encoder = new TextEncoder();
const SENTINEL = "__fuzz_value_sentinel__";

/** `body` as JSON text with `field` set to the raw JSON text `json` (added when absent). */
function withField(body: unknown, field: string, json: string): string {
  const object = { ...(body as Record<string, unknown>) };
  Object.defineProperty(object, field, { value: SENTINEL, enumerable: true, configurable: true, writable: true });
  return JSON.stringify(object).replace(JSON.stringify(SENTINEL), json);
}

/** The body bytes of a body recipe (undefined for path and query recipes). */
function bodyBytes(recipe: Recipe, valid: string): Uint8Array | undefined {
  switch (recipe.target) {
    case "field":
      return encoder.encode(withField(JSON.parse(valid), recipe.field, recipe.json));
    case "extra-field":
      return encoder.encode(withField(JSON.parse(valid), recipe.key, recipe.json));
    case "raw-body":
      return encoder.encode(recipe.text);
    case "bytes": {
      const bytes = encoder.encode(valid);
      const at = recipe.at % (bytes.length + 1);
      return new Uint8Array([...bytes.slice(0, at), ...recipe.bytes, ...bytes.slice(at)]);
    }
    case "padded":
      return encoder.encode(valid + " ".repeat(Math.max(0, recipe.size - valid.length)));
    case "truncated":
      return encoder.encode(valid.slice(0, recipe.at % Math.max(1, valid.length)));
    default:
      return undefined;
  }
}

/**
 * What the server must make of `bytes` as the body of `route` (docs/protocol.md#wire-conventions): too large, not
 * UTF-8, not JSON or refused by the declared schema are malformed; otherwise the decoded
 * value. A single leading BOM is dropped by UTF-8 decoding; a body of JSON whitespace only is `{}`.
 */
function judgeBody(route: RouteSpec, bytes: Uint8Array): { expect: Expectation; decoded: unknown } {
  if (bytes.byteLength > BODY_LIMIT)
    return { expect: { malformed: true, codes: new Set(["payload_too_large"]) }, decoded: undefined };
  const invalid: Expectation = { malformed: true, codes: new Set(["invalid_request"]) };
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(bytes);
  } catch {
    return { expect: invalid, decoded: undefined };
  }
  let value: unknown = {};
  if (!/^[ \t\n\r]*$/.test(text)) {
    try {
      value = JSON.parse(text);
    } catch {
      return { expect: invalid, decoded: undefined };
    }
  }
  const parsed = route.body!.safeParse(value);
  return parsed.success ? { expect: { malformed: false }, decoded: value } : { expect: invalid, decoded: undefined };
}

/** The declared route (other than `route`) whose path template matches `method` and `path`. */
function routeOfPath(route: RouteSpec, path: string): RouteSpec | undefined {
  return ROUTES.find((other) => {
    if (other === route || other.method !== route.method) return false;
    return new RegExp(`^${other.path.replace(/\{[^}]+\}/g, "[^/]+")}$`).test(path);
  });
}

/** What the server must make of a path whose parameter `name` is the raw segment `raw`. */
function judgeSegment(route: RouteSpec, path: string, raw: string): Expectation {
  // The runtime resolves dot segments (`.`, `..`, `%2e`) before the Worker sees the path.
  // `…/stores/S/keys/..` resolves to another declared route (docs/protocol.md#operating-at-scale says such a path is
  // never a success; nothing can tell it from a request for that route, see docs/fuzzing.md).
  const resolved = new URL(`http://x${path}`).pathname;
  if (resolved !== path) {
    const other = routeOfPath(route, resolved);
    return other === undefined
      ? { malformed: true, codes: new Set(["invalid_request", "not_found"]) }
      : { malformed: false, route: other };
  }
  if (raw === "") return { malformed: true, codes: new Set(["invalid_request", "not_found"]) };
  let decoded: string;
  try {
    decoded = decodeURIComponent(raw);
  } catch {
    return { malformed: true, codes: new Set(["invalid_request"]) };
  }
  return nameProblem(decoded) === undefined
    ? { malformed: false }
    : { malformed: true, codes: new Set(["invalid_request"]) };
}

/** What the server must make of a query string: each parameter once, then the declared schema. */
function judgeQuery(route: RouteSpec, query: string): Expectation {
  const invalid: Expectation = { malformed: true, codes: new Set(["invalid_request"]) };
  const value: Record<string, string> = Object.create(null) as Record<string, string>;
  for (const [key, v] of new URL(`http://x/?${query}`).searchParams) {
    if (Object.hasOwn(value, key)) return invalid;
    value[key] = v;
  }
  return route.query!.safeParse({ ...value }).success ? { malformed: false } : invalid;
}

/** The request `recipe` describes against the world `w`, with what it must answer. */
export function build(route: RouteSpec, w: World, recipe: Recipe, token: string): BuiltRequest {
  const headers: Record<string, string> = { Authorization: `Bearer ${token}` };
  if (route.websocket !== undefined) headers["Upgrade"] = "websocket";
  const params = worldParams(route, w);
  const encoded: Record<string, string> = Object.fromEntries(
    Object.entries(params).map(([k, v]) => [k, encodeURIComponent(v)]),
  );
  if (recipe.target === "param") encoded[recipe.name] = recipe.segment;
  const path = route.path.replace(/\{([^}]+)\}/g, (_, name: string) => encoded[name] ?? "");
  const validBody = worldBody(route, w);
  const valid = validBody === undefined ? undefined : JSON.stringify(validBody);
  let target = path;
  let body: Uint8Array | undefined = valid === undefined ? undefined : encoder.encode(valid);
  let expect: Expectation = { malformed: false };
  let decoded: unknown = validBody;
  if (recipe.target === "param") {
    expect = judgeSegment(route, path, recipe.segment);
  } else if (recipe.target === "query") {
    const query = recipe.pairs.map(([k, v]) => `${k}=${v}`).join("&");
    target = `${path}?${query}`;
    expect = judgeQuery(route, query);
  } else {
    body = bodyBytes(recipe, valid ?? "{}");
    ({ expect, decoded } = judgeBody(route, body!));
    if (recipe.contentType !== null) headers["Content-Type"] = recipe.contentType;
  }
  if (body !== undefined && headers["Content-Type"] === undefined && !("contentType" in recipe)) {
    headers["Content-Type"] = "application/json";
  }
  return { method: route.method, target, headers, body, expect, decoded };
}

/** A short, printable description of a recipe for failure messages. */
export function describeRecipe(recipe: Recipe): string {
  const text = JSON.stringify(recipe);
  return text.length > 300 ? `${text.slice(0, 300)}… (${text.length} chars)` : text;
}
