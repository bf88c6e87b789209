/**
 * Request bodies and query strings: size limit, JSON parsing and schema validation.
 *
 * Guarantees: a body over {@link BODY_LIMIT_BYTES} is `payload_too_large` (65,536 bytes is
 * accepted); malformed JSON, wrong types and unknown fields are `invalid_request` whose
 * `error.field` names the first offending field. Validation happens before any Durable
 * Object is touched, so bad input changes nothing.
 */
import type { Context } from "hono";
import type { z } from "zod";
import { ShiftlockError } from "../protocol/errors.ts";
import { invalidFromZod } from "../protocol/zod-invalid.ts";

export const BODY_LIMIT_BYTES = 64 * 1024;

/** Read the body as text, refusing anything larger than the limit. */
export async function readBodyText(request: Request): Promise<string> {
  const declared = Number(request.headers.get("Content-Length") ?? "NaN");
  if (Number.isFinite(declared) && declared > BODY_LIMIT_BYTES) throw new ShiftlockError("payload_too_large");
  if (request.body === null) return "";
  if (Number.isFinite(declared)) {
    // HTTP framing bounds a body with a declared length (the runtime reads no more), so it is
    // read in one call; the check after it covers a Request built in-process that lies.
    const bytes = new Uint8Array(await request.arrayBuffer());
    if (bytes.byteLength > BODY_LIMIT_BYTES) throw new ShiftlockError("payload_too_large");
    return decodeUtf8(bytes);
  }
  const reader = (request.body as ReadableStream<Uint8Array>).getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > BODY_LIMIT_BYTES) {
      await reader.cancel();
      throw new ShiftlockError("payload_too_large");
    }
    chunks.push(value);
  }
  const bytes = new Uint8Array(total);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return decodeUtf8(bytes);
}

function decodeUtf8(bytes: Uint8Array): string {
  try {
    return new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(bytes);
  } catch {
    throw new ShiftlockError("invalid_request", "body is not valid UTF-8", { field: "body" });
  }
}

/** JSON's own whitespace (RFC 8259): what may surround a value. `trim()` would take more (NBSP, U+FEFF, …). */
const JSON_WHITESPACE_ONLY = /^[ \t\n\r]*$/;

/**
 * Parse and validate a JSON body. A body of JSON whitespace only (or none) is treated as
 * `{}`. One leading byte order mark is dropped by UTF-8 decoding (WHATWG Encoding); any
 * other U+FEFF, like any other non-JSON whitespace, makes the body invalid JSON. The
 * `Content-Type` header is not consulted: a body is JSON whatever it declares.
 */
export async function jsonBody<S extends z.ZodType>(c: Context, schema: S): Promise<z.output<S>> {
  const text = await readBodyText(c.req.raw);
  let value: unknown = {};
  if (!JSON_WHITESPACE_ONLY.test(text)) {
    try {
      value = JSON.parse(text);
    } catch {
      throw new ShiftlockError("invalid_request", "body is not valid JSON", { field: "body" });
    }
  }
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw invalidFromZod(parsed.error, "body");
  return parsed.data;
}

/** Validate the query string (each parameter at most once; `ignored` ones are another layer's). */
export function queryParams<S extends z.ZodType>(c: Context, schema: S, ignored: readonly string[] = []): z.output<S> {
  const url = new URL(c.req.url);
  // No prototype: `?__proto__=1` must become an own (unknown, refused) field, not a no-op
  // assignment to Object.prototype's `__proto__` setter that would let it pass unseen.
  const value = Object.create(null) as Record<string, string>;
  for (const [key, v] of url.searchParams) {
    if (ignored.includes(key)) continue;
    if (Object.hasOwn(value, key)) {
      throw new ShiftlockError("invalid_request", `query parameter ${key} given twice`, { field: key });
    }
    value[key] = v;
  }
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw invalidFromZod(parsed.error, "query");
  return parsed.data;
}
