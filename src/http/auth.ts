/**
 * Bearer-token authentication and namespace/role authorization (SPEC §2 "Auth").
 *
 * Guarantees:
 * - Runs before every other check on every `/v1` route, so an unauthenticated request
 *   learns nothing (not even whether the route exists) and changes nothing.
 * - Tokens are compared as SHA-256 digests with `crypto.subtle.timingSafeEqual`, against
 *   every configured token without early exit; a token is never logged or echoed.
 * - `read` tokens may only GET (which includes watch); `write` tokens may do everything.
 * - A token lists the namespaces it may touch, or `"*"` for all.
 *
 * Configuration: the `AUTH_TOKENS` variable (a secret in deployments) holds JSON, e.g.
 * `[{"token":"s3cret","role":"write","namespaces":["billing"]}]`. See docs/auth.md.
 * `npm start` passes a development-only value that accepts `dev-token`.
 */
import { z } from "zod";
import { ShiftlockError } from "../protocol/errors.ts";

export type Role = "read" | "write";

export interface Grant {
  role: Role;
  namespaces: "*" | readonly string[];
}

const tokenConfigSchema = z.array(
  z.strictObject({
    token: z.string().min(8, "tokens must be at least 8 characters"),
    role: z.enum(["read", "write"]),
    namespaces: z.union([z.literal("*"), z.array(z.string().min(1)).min(1)]),
  }),
);

interface CompiledToken extends Grant {
  digest: Uint8Array;
}

const encoder = new TextEncoder();
const cache = new Map<string, Promise<CompiledToken[]>>();

async function sha256(text: string): Promise<Uint8Array> {
  return new Uint8Array(await crypto.subtle.digest("SHA-256", encoder.encode(text)));
}

/** Parse and hash the token configuration once per distinct configuration string. */
export function compileTokens(config: string | undefined): Promise<CompiledToken[]> {
  const key = config ?? "";
  let compiled = cache.get(key);
  if (compiled === undefined) {
    compiled = (async () => {
      if (key.trim() === "") return [];
      let parsed: unknown;
      try {
        parsed = JSON.parse(key);
      } catch {
        throw new ShiftlockError("internal", "AUTH_TOKENS is not valid JSON");
      }
      const tokens = tokenConfigSchema.safeParse(parsed);
      if (!tokens.success) throw new ShiftlockError("internal", "AUTH_TOKENS does not match its schema");
      return Promise.all(
        tokens.data.map(async (t) => ({ role: t.role, namespaces: t.namespaces, digest: await sha256(t.token) })),
      );
    })();
    // A bad configuration must not be cached forever as a rejected promise.
    compiled.catch(() => cache.delete(key));
    cache.set(key, compiled);
  }
  return compiled;
}

/** Read the bearer token from the header, or from the WebSocket subprotocol list. */
export function presentedToken(headers: Headers): { token: string; subprotocol?: string } | undefined {
  const authorization = headers.get("Authorization");
  if (authorization !== null) {
    const match = /^Bearer ([^\s]+)$/i.exec(authorization.trim());
    return match?.[1] === undefined ? undefined : { token: match[1] };
  }
  const protocols = headers.get("Sec-WebSocket-Protocol");
  if (protocols !== null) {
    for (const raw of protocols.split(",")) {
      const protocol = raw.trim();
      if (protocol.startsWith(BEARER_SUBPROTOCOL_PREFIX) && protocol.length > BEARER_SUBPROTOCOL_PREFIX.length) {
        return { token: protocol.slice(BEARER_SUBPROTOCOL_PREFIX.length), subprotocol: protocol };
      }
    }
  }
  return undefined;
}

/** Browsers cannot set headers on a WebSocket; they send the token as this subprotocol. */
export const BEARER_SUBPROTOCOL_PREFIX = "shiftlock.bearer.";

/** Find the grant of a presented token, comparing against every configured token. */
export async function authenticate(config: string | undefined, token: string): Promise<Grant | undefined> {
  const tokens = await compileTokens(config);
  const digest = await sha256(token);
  let found: Grant | undefined;
  for (const candidate of tokens) {
    // No early exit: the time taken does not depend on which token matched.
    if (crypto.subtle.timingSafeEqual(candidate.digest, digest) && found === undefined) {
      found = { role: candidate.role, namespaces: candidate.namespaces };
    }
  }
  return found;
}

/** Throw `forbidden` unless the grant covers the namespace and the method. */
export function authorize(grant: Grant, namespace: string, method: string): void {
  if (grant.namespaces !== "*" && !grant.namespaces.includes(namespace)) {
    throw new ShiftlockError("forbidden", "token is not allowed for this namespace");
  }
  const isRead = method === "GET" || method === "HEAD";
  if (!isRead && grant.role !== "write") throw new ShiftlockError("forbidden", "token is read-only");
}
