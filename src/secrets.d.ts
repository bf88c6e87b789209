// Secrets are not in wrangler.toml, so `wrangler types` cannot see them.
declare namespace Cloudflare {
  interface Env {
    /** JSON token list (docs/auth.md). Unset means no token is accepted. */
    AUTH_TOKENS?: string;
  }
}
