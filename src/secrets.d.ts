// Secrets and per-environment settings not in wrangler.toml, so `wrangler types` cannot see them.
declare namespace Cloudflare {
  interface Env {
    /** JSON token list (docs/auth.md). Unset means no token is accepted. */
    AUTH_TOKENS?: string;
    /** Origins browsers may call from: comma-separated, or `*` (src/http/cors.ts). Unset: none. */
    CORS_ORIGINS?: string;
    /** HMAC key of watch tickets, ≥ 32 characters (src/http/watch-tickets.ts). Unset: derived from AUTH_TOKENS. */
    WATCH_TICKET_KEY?: string;
  }
}
