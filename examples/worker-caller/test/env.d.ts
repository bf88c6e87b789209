// The Worker under test, for `exports` of "cloudflare:workers" (what `wrangler types` writes
// into worker-configuration.d.ts).
import type * as mainModule from "../src/index.ts";

declare global {
  namespace Cloudflare {
    interface GlobalProps {
      mainModule: typeof mainModule;
    }
  }
}
