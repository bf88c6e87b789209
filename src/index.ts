/**
 * Worker entry: the Hono app and the Durable Object classes it fronts.
 */
import { app } from "./http/app.ts";

export { ClaimObject } from "./claims/claim-object.ts";
export { GenerationObject } from "./generations/generation-object.ts";
export { ScopeObject } from "./coord/scope-object.ts";
export { NamespaceIndex } from "./listing/index-object.ts";
export { IndexShard } from "./listing/index-shard.ts";

export default app satisfies ExportedHandler<Env>;
