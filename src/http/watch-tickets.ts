/**
 * Watch tickets (docs/protocol.md#watch-tickets): issuing them, and authenticating a watch
 * upgrade that presents one instead of a bearer token.
 *
 * Guarantees:
 * - A ticket is `v1.<payload>.<mac>` (base64url): the payload names the exact watch path,
 *   the namespace, the issuing token's role (and name, when it has one), the expiry and a
 *   random id; the MAC is HMAC-SHA-256 under the ticket key. Nothing is stored to issue or
 *   check one, and nothing in it can be changed or forged without the key. It carries no
 *   part of the bearer token.
 * - The key is `WATCH_TICKET_KEY` (a secret, at least 32 characters) when set; unset, it is
 *   derived from `AUTH_TOKENS` (as secret as the tokens, and rotated with them), so `npm
 *   start`, the tests and a deployment without the secret work unconfigured. A set key that
 *   is too short fails closed (`internal`), like a malformed `AUTH_TOKENS`.
 * - A presented ticket authenticates only a WebSocket upgrade of exactly its path, before
 *   its expiry; anything else is `unauthorized`. Single use is the watched object's job
 *   (src/durable/ticket-log.ts): the router forwards the ticket's id and expiry to it.
 *
 * Does not: remember tickets, or accept a ticket for any request but a watch upgrade.
 */
import type { Hono } from "hono";
import { systemClock } from "../core/clock.ts";
import { ShiftlockError } from "../protocol/errors.ts";
import { ROUTES } from "../protocol/routes.ts";
import { WATCH_TICKET_TTL_MS, issueWatchTicket } from "../protocol/watch-ticket-routes.ts";
import type { AppEnv } from "./app-env.ts";
import type { Grant } from "./auth.ts";
import { mount } from "./mount.ts";

/** Shortest `WATCH_TICKET_KEY` accepted (256 bits of base64 or hex need more). */
export const WATCH_TICKET_KEY_MIN_LENGTH = 32;

/** What an accepted ticket lets through, and what the watched object needs to use it once. */
export interface TicketUse {
  grant: Grant;
  /** The ticket's random id (never the ticket itself). */
  id: string;
  expiresAtMs: number;
}

interface TicketPayload {
  /** The exact watch path. */
  p: string;
  /** The namespace (decoded). */
  ns: string;
  /** The issuing token's role. */
  r: string;
  /** The issuing token's name, when it has one. */
  n?: string;
  /** Expiry, epoch ms. */
  e: number;
  /** Random id: what the watched object remembers. */
  id: string;
}

const encoder = new TextEncoder();
let cachedKey: { source: string; key: Promise<CryptoKey> } | undefined;

/** The HMAC key for this configuration (see the module doc), imported once per isolate. */
function ticketKey(env: Env): Promise<CryptoKey> {
  const configured = env.WATCH_TICKET_KEY;
  if (configured !== undefined && configured !== "" && configured.length < WATCH_TICKET_KEY_MIN_LENGTH) {
    throw new ShiftlockError("internal", `WATCH_TICKET_KEY must be at least ${WATCH_TICKET_KEY_MIN_LENGTH} characters`);
  }
  const source =
    configured !== undefined && configured !== ""
      ? `key\n${configured}`
      : `derived from AUTH_TOKENS\n${env.AUTH_TOKENS ?? ""}`;
  if (cachedKey?.source === source) return cachedKey.key;
  const key = (async () => {
    const material = await crypto.subtle.digest("SHA-256", encoder.encode(`shiftlock watch tickets v1\n${source}`));
    return crypto.subtle.importKey("raw", material, { name: "HMAC", hash: "SHA-256" }, false, ["sign", "verify"]);
  })();
  cachedKey = { source, key };
  return key;
}

function base64url(bytes: Uint8Array): string {
  let binary = "";
  for (const b of bytes) binary += String.fromCharCode(b);
  return btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function fromBase64url(text: string): Uint8Array | undefined {
  if (!/^[A-Za-z0-9_-]*$/.test(text)) return undefined;
  try {
    const binary = atob(text.replace(/-/g, "+").replace(/_/g, "/"));
    return Uint8Array.from(binary, (ch) => ch.charCodeAt(0));
  } catch {
    return undefined;
  }
}

/** Sign a ticket for `path` in `ns`, issued by `grant`, at `nowMs`. */
export async function signTicket(
  env: Env,
  grant: Grant & { name?: string },
  ns: string,
  path: string,
  nowMs: number,
): Promise<{ ticket: string; expiresAtMs: number }> {
  const expiresAtMs = nowMs + WATCH_TICKET_TTL_MS;
  const payload: TicketPayload = {
    p: path,
    ns,
    r: grant.role,
    e: expiresAtMs,
    id: base64url(crypto.getRandomValues(new Uint8Array(16))),
  };
  if (typeof grant.name === "string") payload.n = grant.name;
  const body = base64url(encoder.encode(JSON.stringify(payload)));
  const mac = new Uint8Array(await crypto.subtle.sign("HMAC", await ticketKey(env), encoder.encode(`v1.${body}`)));
  return { ticket: `v1.${body}.${base64url(mac)}`, expiresAtMs };
}

/**
 * The use a presented ticket grants for a request to `path`, or `unauthorized`: a ticket
 * that is malformed, forged, expired, or for another path.
 */
export async function verifyTicket(env: Env, ticket: string, path: string, nowMs: number): Promise<TicketUse> {
  const refused = new ShiftlockError("unauthorized", "watch ticket is invalid, expired or not for this path");
  const [version, body, mac, ...rest] = ticket.split(".");
  if (version !== "v1" || body === undefined || mac === undefined || rest.length > 0) throw refused;
  const macBytes = fromBase64url(mac);
  const bodyBytes = fromBase64url(body);
  if (macBytes === undefined || bodyBytes === undefined) throw refused;
  const valid = await crypto.subtle.verify("HMAC", await ticketKey(env), macBytes, encoder.encode(`v1.${body}`));
  if (!valid) throw refused;
  let payload: TicketPayload;
  try {
    payload = JSON.parse(new TextDecoder().decode(bodyBytes)) as TicketPayload;
  } catch {
    throw refused;
  }
  if (payload.p !== path || !(nowMs < payload.e)) throw refused;
  // Every grant has a name (its configured one or `token#<index>`), carried in the ticket.
  const grant: Grant = { role: payload.r as Grant["role"], name: payload.n ?? "", namespaces: [payload.ns] };
  return { grant, id: payload.id, expiresAtMs: payload.e };
}

/** The watch routes' path templates by segment: a parameter's name, or null for a literal. */
const WATCH_TEMPLATES = ROUTES.filter((route) => route.status === 101).map((route) => ({
  segments: route.path.split("/").map((segment) => (segment.startsWith("{") ? segment.slice(1, -1) : null)),
  literal: route.path.split("/"),
}));

/**
 * The namespace a watch path names (decoded), or undefined when `path` is not the path of
 * a watch route. Names inside are checked when the upgrade itself arrives.
 */
export function watchPathNamespace(path: string): string | undefined {
  const parts = path.split("/");
  for (const template of WATCH_TEMPLATES) {
    if (template.literal.length !== parts.length) continue;
    let ns: string | undefined;
    const matches = template.literal.every((segment, i) => {
      const part = parts[i] ?? "";
      if (template.segments[i] === null) return segment === part;
      if (part === "") return false;
      if (template.segments[i] === "ns") ns = part;
      return true;
    });
    if (matches && ns !== undefined) {
      try {
        return decodeURIComponent(ns);
      } catch {
        return undefined;
      }
    }
  }
  return undefined;
}

export function mountWatchTicketRoutes(app: Hono<AppEnv>): void {
  mount(app, issueWatchTicket, async (c, { params, body }) => {
    if (watchPathNamespace(body.path) !== params.ns) {
      throw new ShiftlockError("invalid_request", "path must be a watch path of this namespace, without a query", {
        field: "path",
      });
    }
    const issued = await signTicket(c.env, c.get("grant"), params.ns, body.path, systemClock.nowMs());
    return { status: 201, body: issued };
  });
}
