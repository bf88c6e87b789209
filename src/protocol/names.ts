/**
 * Names (namespace, claim, generation id, volume, store, key, participant, operation id).
 *
 * Guarantees: a valid name is 1–256 bytes of UTF-8 with no control characters (Unicode Cc,
 * which includes DEL), no lone surrogates (which have no UTF-8 form), and is not `.` or `..`
 * (docs/protocol.md#names-and-paths: URL parsing resolves those as dot segments, even percent-encoded, so such a
 * name could never be addressed). Validation is the same in the server, the client and the
 * in-memory backends, in bodies and in paths.
 */
import { z } from "zod";

export const NAME_MAX_BYTES = 256;

const CONTROL = /\p{Cc}/u;
const LONE_SURROGATE = /\p{Cs}/u;
const encoder = new TextEncoder();

/**
 * True when `value` holds a lone surrogate: such a string has no UTF-8 form, so storage and
 * the wire would turn it into U+FFFD and a later read would differ from what was accepted.
 */
export function hasLoneSurrogate(value: string): boolean {
  return LONE_SURROGATE.test(value);
}

/** Why `value` is not a valid name, or undefined when it is. */
export function nameProblem(value: string): string | undefined {
  if (value.length === 0) return "must not be empty";
  if (value === "." || value === "..") return "must not be '.' or '..' (URLs resolve them as dot segments)";
  if (hasLoneSurrogate(value)) return "must be valid UTF-8";
  if (CONTROL.test(value)) return "must not contain control characters";
  if (encoder.encode(value).byteLength > NAME_MAX_BYTES) return `must be at most ${NAME_MAX_BYTES} bytes of UTF-8`;
  return undefined;
}

/** zod schema for a name. */
export const nameSchema = z.string().superRefine((value, ctx) => {
  const problem = nameProblem(value);
  if (problem !== undefined) ctx.addIssue({ code: "custom", message: problem });
});
