/**
 * Bearer-token authentication and namespace/role authorization (docs/protocol.md#authentication-and-roles).
 *
 * Guarantees:
 * - Runs before every other check on every `/v1` route, so an unauthenticated request
 *   learns nothing (not even whether the route exists) and changes nothing.
 * - Tokens are compared as SHA-256 digests in constant time, against every configured token
 *   without early exit; a token is never logged or echoed in an error.
 * - Verified digests are remembered per isolate, for the configuration that verified them
 *   only: at most {@link VERIFIED_DIGESTS_CACHED} of them, least recently used evicted
 *   first, each the SHA-256 of a presented token mapped to its grant (never the token
 *   itself). A request whose digest is remembered skips the comparison against every
 *   configured token, not the hashing. A changed `AUTH_TOKENS` value compiles afresh with an
 *   empty cache and the old one is dropped, so a removed token is refused on the first
 *   request that sees the new value. Refusals are never remembered (an unknown token always
 *   pays the full comparison), so guessing cannot fill or probe the cache.
 * - `read` tokens may only GET (which includes a watch upgrade) or HEAD; `write` tokens may
 *   do everything but evict; `admin` tokens may do everything. A token lists the namespaces
 *   it may touch, or `"*"` for all.
 * - Each grant carries the token's `name` (configured, else `token#<position in the list>`),
 *   which log lines show: never anything derived from the secret.
 * - A configuration that does not parse, or lists one token twice, fails closed: every `/v1`
 *   request is refused (500 `internal`, since it is an operator error, never a client's).
 *
 * Configuration: the `AUTH_TOKENS` variable (a secret in deployments) holds JSON, e.g.
 * `[{"token":"s3cret-token","role":"write","namespaces":["billing"],"name":"billing-deployer"}]`
 * (`name` optional). See docs/auth.md. `npm start` passes a development-only value that
 * accepts `dev-token` (write) and `dev-admin-token` (admin).
 *
 * Does not: rate-limit failed attempts, or expire tokens (rotate by editing the secret).
 */
import { z } from "zod";
import { ShiftlockError } from "../protocol/errors.ts";
import { ROLES, type Role } from "../protocol/operators.ts";
import type { RouteRole } from "../protocol/route.ts";

export type { Role };

/** What a token may do, and the name log lines call it by. */
export interface Grant {
  role: Role;
  /** The configured `name`, or `token#<index>` (its position in the list) when it has none. */
  name: string;
  /** The namespaces the token may touch, or `"*"` for every namespace. */
  namespaces: "*" | readonly string[];
}

/** Shortest accepted token, so a typo'd config cannot create a guessable token. */
export const TOKEN_MIN_LENGTH = 8;

const tokenConfigSchema = z.array(
  z.strictObject({
    token: z
      .string()
      .min(TOKEN_MIN_LENGTH, `tokens must be at least ${TOKEN_MIN_LENGTH} characters`)
      .regex(/^[\x21-\x7e]+$/, "tokens must be printable ASCII without spaces"),
    role: z.enum(ROLES),
    namespaces: z.union([z.literal("*"), z.array(z.string().min(1)).min(1)]),
    name: z
      .string()
      .min(1)
      .max(128)
      .regex(/^[\x20-\x7e]+$/, "names must be printable ASCII")
      .optional(),
  }),
);

interface CompiledToken extends Grant {
  digest: Uint8Array;
}

/**
 * Verified digests remembered per isolate. Bounded so memory stays small whatever tokens
 * are presented (256 × ~100 bytes); large enough for every token a deployment configures.
 */
export const VERIFIED_DIGESTS_CACHED = 256;

/** One configuration, parsed and hashed, with the digests it has verified. */
interface CompiledConfig {
  tokens: CompiledToken[];
  /** Digest (as a binary string) of a presented token → its grant; least recently used first. */
  verified: Map<string, Grant>;
}

const encoder = new TextEncoder();
/** The configuration this isolate last compiled: one at a time, so a rotation drops the old. */
let current: { config: string; compiled: Promise<CompiledConfig> } | undefined;

async function sha256(text: string): Promise<Uint8Array> {
  return new Uint8Array(await crypto.subtle.digest("SHA-256", encoder.encode(text)));
}

/** A digest as a Map key: one UTF-16 unit per byte. */
function digestKey(digest: Uint8Array): string {
  return String.fromCharCode(...digest);
}

/**
 * Constant-time equality of two digests. Portable (Workers and Node); the inputs are
 * fixed-length digests, so only their contents, never their lengths, could leak.
 */
function digestsEqual(a: Uint8Array, b: Uint8Array): boolean {
  let difference = a.length ^ b.length;
  for (let i = 0; i < a.length; i++) difference |= (a[i] ?? 0) ^ (b[i] ?? 0);
  return difference === 0;
}

/**
 * Parse `AUTH_TOKENS` (JSON list of `{token, role, namespaces, name?}`). An empty or absent value
 * means no tokens (every `/v1` request is 401). Throws `internal` naming the problem, never
 * the token, when the value is malformed or lists a token twice.
 */
export function parseTokenConfig(config: string | undefined): { token: string; grant: Grant }[] {
  const text = config ?? "";
  if (text.trim() === "") return [];
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new ShiftlockError("internal", "AUTH_TOKENS is not valid JSON");
  }
  const tokens = tokenConfigSchema.safeParse(parsed);
  if (!tokens.success) {
    const issue = tokens.error.issues[0];
    const where = issue?.path.filter((p) => p !== "token").join(".") ?? "";
    throw new ShiftlockError(
      "internal",
      `AUTH_TOKENS does not match its schema at [${where}]: ${issue?.message ?? ""}`,
    );
  }
  const seen = new Set<string>();
  return tokens.data.map((t, index) => {
    if (seen.has(t.token)) throw new ShiftlockError("internal", `AUTH_TOKENS lists the token at [${index}] twice`);
    seen.add(t.token);
    return { token: t.token, grant: { role: t.role, namespaces: t.namespaces, name: t.name ?? `token#${index}` } };
  });
}

/** Parse and hash the token configuration once, until the configuration string changes. */
function compileConfig(config: string | undefined): Promise<CompiledConfig> {
  const key = config ?? "";
  if (current?.config === key) return current.compiled;
  const compiled = (async () => ({
    tokens: await Promise.all(
      parseTokenConfig(key).map(async ({ token, grant }) => ({ ...grant, digest: await sha256(token) })),
    ),
    verified: new Map<string, Grant>(),
  }))();
  const entry = { config: key, compiled };
  // A bad configuration must not stay cached as a rejected promise.
  compiled.catch(() => {
    if (current === entry) current = undefined;
  });
  current = entry;
  return compiled;
}

/** Browsers cannot set headers on a WebSocket; they send the token as this subprotocol. */
export const BEARER_SUBPROTOCOL_PREFIX = "shiftlock.bearer.";

/** A token found on a request, and the subprotocol that carried it (to echo in the handshake). */
export interface PresentedToken {
  token: string;
  subprotocol?: string;
}

/**
 * Read the bearer token: from `Authorization: Bearer <token>`, or, on a WebSocket upgrade
 * without that header, from a `shiftlock.bearer.<token>` subprotocol. A malformed
 * `Authorization` header counts as no token (it is not silently ignored in favour of another).
 */
export function presentedToken(headers: Headers): PresentedToken | undefined {
  const authorization = headers.get("Authorization");
  if (authorization !== null) {
    const match = /^Bearer +([\x21-\x7e]+)$/i.exec(authorization.trim());
    return match?.[1] === undefined ? undefined : { token: match[1] };
  }
  if (headers.get("Upgrade")?.toLowerCase() !== "websocket") return undefined;
  const protocols = headers.get("Sec-WebSocket-Protocol");
  if (protocols === null) return undefined;
  for (const raw of protocols.split(",")) {
    const protocol = raw.trim();
    if (protocol.startsWith(BEARER_SUBPROTOCOL_PREFIX) && protocol.length > BEARER_SUBPROTOCOL_PREFIX.length) {
      return { token: protocol.slice(BEARER_SUBPROTOCOL_PREFIX.length), subprotocol: protocol };
    }
  }
  return undefined;
}

/**
 * The 101 response with `subprotocol` echoed in `Sec-WebSocket-Protocol`, or undefined when
 * nothing needs changing (not an upgrade, no subprotocol token, or already echoed).
 * Browsers fail a handshake that does not echo one of the subprotocols they offered.
 */
export function withEchoedSubprotocol(res: Response, subprotocol: string | undefined): Response | undefined {
  if (subprotocol === undefined || res.status !== 101 || res.headers.has("Sec-WebSocket-Protocol")) return undefined;
  const headers = new Headers(res.headers);
  headers.set("Sec-WebSocket-Protocol", subprotocol);
  return new Response(null, { status: 101, webSocket: res.webSocket, headers });
}

/**
 * Find the grant of a presented token: a remembered verification of its digest under this
 * configuration, else a comparison against every configured token (see the module doc).
 */
export async function authenticate(config: string | undefined, token: string): Promise<Grant | undefined> {
  const { tokens, verified } = await compileConfig(config);
  const digest = await sha256(token);
  const key = digestKey(digest);
  const remembered = verified.get(key);
  if (remembered !== undefined) {
    // Most recently used last, so eviction takes the longest unused.
    verified.delete(key);
    verified.set(key, remembered);
    return remembered;
  }
  let found: Grant | undefined;
  for (const candidate of tokens) {
    // No early exit: the time taken does not depend on which token matched.
    const match = digestsEqual(candidate.digest, digest);
    if (match && found === undefined) {
      found = { role: candidate.role, namespaces: candidate.namespaces, name: candidate.name };
    }
  }
  if (found !== undefined) {
    verified.set(key, found);
    if (verified.size > VERIFIED_DIGESTS_CACHED) {
      const oldest = verified.keys().next();
      if (oldest.done !== true) verified.delete(oldest.value);
    }
  }
  return found;
}

/** True when a token of role `held` may call a route that needs `needed` (each role includes the weaker ones). */
export function roleAllows(held: Role, needed: RouteRole): boolean {
  return needed === "none" || ROLES.indexOf(held) >= ROLES.indexOf(needed);
}

/**
 * Throw `forbidden` unless the grant covers the namespace and the route's role (`read`:
 * GET and watch; `write`: everything but evict; `admin`: everything).
 */
export function authorize(grant: Grant, namespace: string, role: RouteRole): void {
  if (grant.namespaces !== "*" && !grant.namespaces.includes(namespace)) {
    throw new ShiftlockError("forbidden", "token is not allowed for this namespace");
  }
  if (!roleAllows(grant.role, role)) {
    throw new ShiftlockError("forbidden", grant.role === "read" ? "token is read-only" : `this needs the ${role} role`);
  }
}
