// Oversized request bodies through `npm start` (the Node front before workerd): the Worker
// answers 413 `payload_too_large` before it has read the body, and the caller gets that
// answer — never a 502 or a reset — and its connection still serves the next request.
// Over one connection each (test/e2e/raw-http.ts), so "the same connection" is checked, not
// assumed; bodies are written whole, as a client does.
import { describe, expect, inject, it } from "vitest";
import { converse, type RawRequest } from "./raw-http.ts";

const AUTH = { authorization: "Bearer dev-token", "content-type": "application/json" };
const KiB = 1024;
const MiB = 1024 * KiB;

const ROUTES = [
  ["a claims route", "claims/c/acquire", { generationId: "g", ttlMs: 30_000 }, 200],
  ["a coord route", "volumes/v/stores/s/leases", { participantId: "p" }, 201],
  ["the batch route", "batch", { ops: [{ op: "acquire", claim: "b", generationId: "g", ttlMs: 30_000 }] }, 200],
] as const;

/** `value` as JSON, padded with spaces (JSON whitespace) to exactly `bytes`. */
function padded(value: unknown, bytes: number): Buffer {
  const json = Buffer.from(JSON.stringify(value));
  return Buffer.concat([json, Buffer.alloc(bytes - json.length, 0x20)]);
}

const post = (path: string, body: Buffer, chunked: boolean): RawRequest => ({
  method: "POST",
  path,
  headers: AUTH,
  body,
  chunked,
});

/** A 20,000-byte root is over the 16 KiB root limit: its answer is 400 naming `root`. */
const publishTooLargeRoot = (ns: string): RawRequest =>
  post(
    `/v1/ns/${ns}/volumes/v/stores/s/leases/no-such-lease/publish`,
    padded({ root: "x".repeat(20_000 - 12) }, 20_000),
    false,
  );

const namespace = (): string => `bodies-${crypto.randomUUID()}`;

describe.each(ROUTES)("%s", (_, route, valid) => {
  it.each([
    [64 * KiB + 1, false],
    [64 * KiB + 1, true],
    [1 * MiB, false],
    [1 * MiB, true],
    [10 * MiB, false],
    [10 * MiB, true],
  ])(
    "a body of %i bytes (chunked: %s) is 413, and the same connection serves the next request",
    async (size, chunked) => {
      const ns = namespace();
      const talk = await converse(inject("serverUrl"), [
        post(`/v1/ns/${ns}/${route}`, padded(valid, size), chunked),
        publishTooLargeRoot(ns),
      ]);
      expect(talk.error).toBeUndefined();
      expect(talk.answers.map((a) => [a.status, JSON.parse(a.body) as unknown])).toEqual([
        [413, { error: { code: "payload_too_large", message: "request body too large" } }],
        [400, { error: { code: "invalid_request", field: "root", message: "root: must be at most 16384 bytes" } }],
      ]);
    },
    60_000,
  );
});

describe.each(ROUTES)("%s", (_, route, valid, status) => {
  it.each([false, true])("accepts a body of exactly 65,536 bytes (chunked: %s)", async (chunked) => {
    const talk = await converse(inject("serverUrl"), [
      post(`/v1/ns/${namespace()}/${route}`, padded(valid, 64 * KiB), chunked),
    ]);
    expect(talk.answers.map((a) => a.status)).toEqual([status]);
  });
});

it.each([false, true])(
  "a body over 16 MiB (chunked: %s) gets its 413, then the front closes the connection; a new one serves",
  async (chunked) => {
    const ns = namespace();
    const talk = await converse(inject("serverUrl"), [
      post(`/v1/ns/${ns}/claims/c/acquire`, Buffer.alloc(16 * MiB + 64 * KiB, 0x20), chunked),
      publishTooLargeRoot(ns),
    ]);
    // The answer came first; the front read 16 MiB of the body, then closed (the rest of the
    // body may meet a reset, the next request goes unanswered).
    expect(talk.answers.map((a) => a.status)).toEqual([413]);
    const next = await converse(inject("serverUrl"), [publishTooLargeRoot(ns)]);
    expect(next.error).toBeUndefined();
    expect(next.answers.map((a) => a.status)).toEqual([400]);
  },
  60_000,
);
