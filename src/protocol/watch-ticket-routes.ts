/**
 * The watch-ticket route of docs/protocol.md#watch-tickets, declared once (see route.ts), and
 * the wire facts a ticket's issuer, its verifier and the watched objects share.
 *
 * Guarantees: one spelling of the query parameter a ticket travels in and of its lifetime.
 *
 * Does not: sign or check tickets (src/http/watch-tickets.ts) or remember them
 * (src/durable/ticket-log.ts).
 */
import { z } from "zod";
import { defineRoute } from "./route.ts";

/** How long a ticket opens its watch, ms. */
export const WATCH_TICKET_TTL_MS = 60_000;

/** The query parameter of a watch upgrade that carries a ticket instead of a bearer token. */
export const WATCH_TICKET_PARAM = "ticket";

export const watchTicketBodySchema = z.strictObject({
  /** The watch path the ticket opens, exactly as it will be requested (no query). */
  path: z.string().min(1).max(4096),
});

export const watchTicketSchema = z.strictObject({
  ticket: z.string(),
  expiresAtMs: z.number().int(),
});

export const issueWatchTicket = defineRoute({
  operationId: "issueWatchTicket",
  tag: "watch",
  summary: "A single-use, 60 s ticket that opens one watch without a bearer token",
  description:
    "The ticket opens one WebSocket upgrade of exactly `path` (any query), given as `?ticket=T` instead of a " +
    "bearer token; it carries this token's role and name and is refused (401) anywhere else.",
  method: "POST",
  path: "/v1/ns/{ns}/watch-tickets",
  role: "read",
  body: watchTicketBodySchema,
  status: 201,
  response: watchTicketSchema,
  errors: [],
  // Another ticket is as good as the lost one.
  repeatable: "always",
});

export const WATCH_TICKET_ROUTES = [issueWatchTicket] as const;
