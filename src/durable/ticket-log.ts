/**
 * The watch tickets a watched object (a claim, a scope) has accepted: what makes a ticket
 * single use (docs/protocol.md#watch-tickets) without any namespace-wide store. A ticket is
 * bound to one watch path, so the one object behind that path is the only place it can be
 * used, and so the only place that needs to remember it.
 *
 * Guarantees: {@link TicketLog.accept} says yes at most once per ticket id, durably (the
 * object's own SQLite, so a restart or hibernation forgets nothing), and never for an
 * expired ticket. Rows of expired tickets are dropped on the next accept; the table exists
 * only in objects that were ever watched with a ticket, and no alarm is set for it.
 *
 * Does not: check a ticket's signature or path (the router did, src/http/watch-tickets.ts).
 */

/** The internal query parameters that carry a ticket's use from the router to the object. */
export const TICKET_USE_PARAMS = { id: "ticketId", expiresAtMs: "ticketExpiresAtMs" } as const;

/** A ticket's use as the router forwarded it, or undefined when the upgrade had none. */
export interface TicketUseParams {
  id: string;
  expiresAtMs: number;
}

/**
 * Read the forwarded ticket use from an internal upgrade URL: undefined when there is none,
 * "malformed" when the router sent something unreadable.
 */
export function ticketUseOf(url: URL): TicketUseParams | undefined | "malformed" {
  const id = url.searchParams.get(TICKET_USE_PARAMS.id);
  const expires = url.searchParams.get(TICKET_USE_PARAMS.expiresAtMs);
  if (id === null && expires === null) return undefined;
  const expiresAtMs = Number(expires);
  if (id === null || id === "" || !Number.isSafeInteger(expiresAtMs)) return "malformed";
  return { id, expiresAtMs };
}

export class TicketLog {
  private ready = false;

  constructor(private readonly sql: SqlStorage) {}

  /** True the first time `ticket` is presented before it expires; false ever after. */
  accept(ticket: TicketUseParams, nowMs: number): boolean {
    if (ticket.expiresAtMs <= nowMs) return false;
    if (!this.ready) {
      this.sql.exec(
        "CREATE TABLE IF NOT EXISTS watch_tickets (id TEXT PRIMARY KEY, expires_at_ms INTEGER NOT NULL) WITHOUT ROWID",
      );
      this.ready = true;
    }
    this.sql.exec("DELETE FROM watch_tickets WHERE expires_at_ms <= ?", nowMs);
    if (this.sql.exec("SELECT 1 FROM watch_tickets WHERE id = ?", ticket.id).toArray().length > 0) return false;
    this.sql.exec("INSERT INTO watch_tickets (id, expires_at_ms) VALUES (?, ?)", ticket.id, ticket.expiresAtMs);
    return true;
  }
}
