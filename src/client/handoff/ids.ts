/**
 * Names the runtime makes up: operation ids (`<generation>:<op>:<claim>:<seq>`, as the Go
 * reference) and the default generation id (`<service>-<instanceId>-<nowMs>`).
 *
 * Guarantees: every result is a valid name (docs/protocol.md#wire-conventions: at most 256 bytes of UTF-8, no cut
 * inside a code point). Made of valid names, it is returned unchanged when it fits. When it
 * does not, the readable head is cut at a code-point boundary and followed by `~` and a
 * 64-bit FNV-1a hash of the *whole* head, then the unique suffix, which is always kept
 * whole: two ids differ whenever their heads or suffixes differ (up to a hash collision,
 * about 2^-64 per pair of heads), so a retry reuses its id and two steps never share one.
 *
 * Does not: make ids secret or unguessable (they are idempotency keys, not credentials).
 */
import { NAME_MAX_BYTES } from "../../protocol/names.ts";

const encoder = new TextEncoder();

function utf8Bytes(text: string): number {
  return encoder.encode(text).byteLength;
}

/** The longest prefix of `text` of at most `maxBytes` bytes of UTF-8, whole code points only. */
function cutUtf8(text: string, maxBytes: number): string {
  let bytes = 0;
  let end = 0;
  for (const codePoint of text) {
    const size = utf8Bytes(codePoint);
    if (bytes + size > maxBytes) break;
    bytes += size;
    end += codePoint.length;
  }
  return text.slice(0, end);
}

const FNV_OFFSET = 0xcbf29ce484222325n;
const FNV_PRIME = 0x100000001b3n;
const U64 = (1n << 64n) - 1n;

/** FNV-1a, 64 bits, over the UTF-8 bytes: 16 hex digits (synchronous, no platform crypto). */
function fnv1a64(text: string): string {
  let hash = FNV_OFFSET;
  for (const byte of encoder.encode(text)) hash = ((hash ^ BigInt(byte)) * FNV_PRIME) & U64;
  return hash.toString(16).padStart(16, "0");
}

/** `head + suffix` as a valid name, shortening `head` (never `suffix`) as the module doc says. */
export function boundedName(head: string, suffix: string): string {
  const whole = head + suffix;
  if (utf8Bytes(whole) <= NAME_MAX_BYTES) return whole;
  const tail = `~${fnv1a64(head)}${suffix}`;
  return cutUtf8(head, NAME_MAX_BYTES - utf8Bytes(tail)) + tail;
}

/** The operation id of one logical step: `<generation>:<op>:<claim>:<seq>`, bounded. */
export function operationId(generationId: string, op: string, claim: string, seq: number): string {
  return boundedName(`${generationId}:${op}:${claim}`, `:${seq}`);
}

/** The default generation id: `<service>-<instanceId>-<nowMs>`, bounded. */
export function defaultGenerationId(service: string, instanceId: string, nowMs: number): string {
  return boundedName(`${service}-${instanceId}`, `-${nowMs}`);
}
