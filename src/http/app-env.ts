/**
 * The Hono environment shared by every route module: bindings plus the grant the
 * authentication middleware established for the request.
 */
import type { Grant } from "./auth.ts";
import type { TicketUse } from "./watch-tickets.ts";

export interface AppEnv {
  Bindings: Env;
  Variables: {
    grant: Grant;
    /** Set when a watch upgrade was authenticated by a ticket (the object records its use). */
    ticket?: TicketUse;
  };
}
