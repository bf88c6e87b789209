/**
 * The Hono environment shared by every route module: bindings plus the grant the
 * authentication middleware established for the request.
 */
import type { Grant } from "./auth.ts";

export interface AppEnv {
  Bindings: Env;
  Variables: {
    grant: Grant;
  };
}
