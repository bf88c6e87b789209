/**
 * `shiftlock/fence`: make the resource refuse a stale owner. Pure re-exports.
 *
 * A fencing token protects nothing unless the resource checks it. Each fence here keeps,
 * per fence key, the highest token it accepted and refuses a write with a lower one
 * (`FenceRejected`, nothing written), atomically with the write: in a Durable Object
 * (`Fence`), D1 (`fencedBatch`), SQLite (`sqliteFenced`), Postgres (`postgresFenced`),
 * R2 per object (`fencedPut`), in memory (`MemoryFence`), and over HTTP
 * (`fenceMiddleware`). Free of server code; see docs/fencing.md.
 */
export { FenceRejected, FENCE_REJECTED_CODE, FENCE_REJECTED_STATUS } from "./fence-rejected.ts";
export { PADDED_TOKEN_DIGITS, padToken, toTokenValue } from "./fence-token.ts";
export type { FenceToken } from "./fence-token.ts";
export { FENCE_HEADER, claimFenceKey, fenceCredential, parseFenceHeader, scopeFenceKey } from "./fence-key.ts";
export type { FenceCredential } from "./fence-key.ts";
export { MemoryFence } from "./memory-fence.ts";
export { Fence } from "./durable-object-fence.ts";
export type { FenceStorage } from "./durable-object-fence.ts";
export * from "./sql-fence-statements.ts";
export { d1FenceAccepted, ensureD1Fence, fencedBatch } from "./d1-fence.ts";
export type { D1DatabaseLike, D1StatementLike } from "./d1-fence.ts";
export { ensureSqliteFence, sqliteFenceAccepted, sqliteFenced } from "./sqlite-fence.ts";
export type { SqliteExecutor } from "./sqlite-fence.ts";
export { ensurePostgresFence, postgresFenceAccepted, postgresFenced } from "./postgres-fence.ts";
export type { PostgresQueryable } from "./postgres-fence.ts";
export { R2_FENCE_KEY_META, R2_FENCE_TOKEN_META, fencedPut } from "./r2-fence.ts";
export type {
  FencedPutOptions,
  R2BucketLike,
  R2HttpMetadataLike,
  R2ObjectLike,
  R2PutOptionsLike,
  RereadableBody,
} from "./r2-fence.ts";
export { fenceMiddleware, fenceRejectedResponse } from "./http-fence.ts";
export type {
  FenceContext,
  FenceMiddleware,
  FenceMiddlewareOptions,
  FenceVariables,
  RequestFence,
} from "./http-fence.ts";
