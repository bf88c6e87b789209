/**
 * The Hono environment shared by every route module: bindings plus what the auth
 * middleware established for the request.
 */
import type { Grant } from "./auth.ts";

export interface AppEnv {
  Bindings: Env;
  Variables: {
    /** The validated namespace of a `/v1/ns/{ns}` route. */
    namespace: string;
    grant: Grant;
  };
}
