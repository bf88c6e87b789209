/**
 * Operators on the wire (docs/protocol.md#roles-names-and-whoami, #eviction): the roles a
 * token may carry, what `whoami` answers and the body both eviction routes take.
 *
 * Guarantees: one schema per shape, shared by the router, `/openapi.json`, the client and
 * the in-memory backends; a note is at most {@link NOTE_MAX_BYTES} bytes of UTF-8 (valid
 * Unicode, so it reads back as it was given), checked the same way everywhere.
 *
 * Does not: decide who may evict (src/http/auth.ts does) or what eviction does (the machines).
 */
import { z } from "zod";
import { hasLoneSurrogate } from "./names.ts";

/** The roles a configured token may carry, weakest first: each may do what the previous may. */
export const ROLES = ["read", "write", "admin"] as const;
export type Role = (typeof ROLES)[number];

/** Longest operator note, in bytes of UTF-8. */
export const NOTE_MAX_BYTES = 256;

const encoder = new TextEncoder();

/** An operator's note: free text, at most {@link NOTE_MAX_BYTES} bytes of UTF-8. */
export const noteSchema = z
  .string()
  .superRefine((value, ctx) => {
    if (hasLoneSurrogate(value)) ctx.addIssue({ code: "custom", message: "must be valid UTF-8 (no lone surrogates)" });
    else if (encoder.encode(value).byteLength > NOTE_MAX_BYTES)
      ctx.addIssue({ code: "custom", message: `must be at most ${NOTE_MAX_BYTES} bytes of UTF-8` });
  })
  .describe(`the operator's text, at most ${NOTE_MAX_BYTES} bytes of UTF-8`);

/** `POST …/claims/{claim}/evict` and `POST {scope}/evict`. */
export const evictBodySchema = z.strictObject({ note: noteSchema.optional() });
export type EvictBody = z.output<typeof evictBodySchema>;

/** `GET /v1/ns/{ns}/whoami`: the calling token's configured name and role. */
export const whoamiResponseSchema = z.object({
  name: z.string().describe("the token's configured name (token#<position> when it has none)"),
  role: z.enum(ROLES),
});
export type Whoami = z.output<typeof whoamiResponseSchema>;
