/**
 * R2: `fencedPut` — a put refused when that object was last written under a higher token
 * of the same fence key.
 *
 * Guarantees, per object: the fence key and the token (20 digits) travel in the object's
 * custom metadata (`shiftlock-fence-key`, `shiftlock-fence-token`). A put reads the
 * object's head, compares, then puts conditionally on the etag it read (`etagMatches`, or
 * `etagDoesNotMatch: "*"` when the object is absent), so no write lands between the read
 * and the put; when the condition fails (another writer got in first) it reads and
 * compares again, up to `attempts` times. A lower token throws {@link FenceRejected} and
 * writes nothing; an equal or higher one is written. An object last written under another
 * fence key (or none) is not fenced by this key.
 *
 * Does not: guard objects this fence has not written (R2 has no multi-object
 * transactions: a fence guards each object it has written, not the bucket), nor deletes.
 * The body is sent again on a retry, so it must be re-readable: a `string`, `ArrayBuffer`,
 * `ArrayBufferView`, `Blob` or `null` — not a one-shot `ReadableStream` (buffer it first).
 *
 * @example
 * await fencedPut(env.BUCKET, "reports/today.json", JSON.stringify(report), { fence: lease.fence });
 */
import { formatCounter } from "../../protocol/counter.ts";
import { checkToken } from "./fence-rejected.ts";
import { type FenceToken, padToken, parseStoredToken, toTokenValue } from "./fence-token.ts";

/** Custom-metadata entry holding the fence key of the object's last fenced write. */
export const R2_FENCE_KEY_META = "shiftlock-fence-key";
/** Custom-metadata entry holding that write's token (20 digits). */
export const R2_FENCE_TOKEN_META = "shiftlock-fence-token";

/** Bodies `fencedPut` accepts: all of them can be sent again on a retry. */
export type RereadableBody = string | ArrayBuffer | ArrayBufferView | Blob | null;

/** What `fencedPut` needs of an object's metadata (an `R2Object` has it). */
export interface R2ObjectLike {
  readonly etag: string;
  readonly customMetadata?: Record<string, string> | undefined;
}

/** Put options `fencedPut` passes through (a subset of `R2PutOptions`). */
export interface R2PutOptionsLike {
  onlyIf: { etagMatches?: string; etagDoesNotMatch?: string };
  customMetadata: Record<string, string>;
  httpMetadata?: Headers | R2HttpMetadataLike;
}

/** The object's HTTP metadata (an `R2HTTPMetadata`). */
export interface R2HttpMetadataLike {
  contentType?: string;
  contentLanguage?: string;
  contentDisposition?: string;
  contentEncoding?: string;
  cacheControl?: string;
  cacheExpiry?: Date;
}

/** What `fencedPut` needs of a bucket (an `R2Bucket` has it). */
export interface R2BucketLike<O extends R2ObjectLike = R2ObjectLike> {
  head(key: string): Promise<O | null>;
  put(key: string, value: RereadableBody, options: R2PutOptionsLike): Promise<O | null>;
}

export interface FencedPutOptions {
  /** The fence to write under (a lease's `fence`, or any `{ key, token }`). */
  fence: { readonly key: string; readonly token: FenceToken };
  /** Your own custom metadata, stored beside the fence's two entries. */
  customMetadata?: Record<string, string>;
  /** Passed to `put` as is (an `R2HTTPMetadata` or `Headers`). */
  httpMetadata?: Headers | R2HttpMetadataLike;
  /** Reads and conditional puts before giving up under contention (default 16). */
  attempts?: number;
}

const DEFAULT_ATTEMPTS = 16;

/**
 * Put `body` at `objectKey` unless the object was last written under a higher token of the
 * same fence key; returns the written object. Throws `FenceRejected` (nothing written) on
 * a lower token, and an `Error` when `attempts` conditional puts all lost to other writers.
 */
export async function fencedPut<O extends R2ObjectLike>(
  bucket: R2BucketLike<O>,
  objectKey: string,
  body: RereadableBody,
  options: FencedPutOptions,
): Promise<O> {
  const { key } = options.fence;
  const presented = toTokenValue(options.fence.token, "fence.token");
  if (isOneShot(body)) throw new TypeError("fencedPut: the body must be re-readable (not a ReadableStream)");
  const attempts = options.attempts ?? DEFAULT_ATTEMPTS;
  const customMetadata = {
    ...options.customMetadata,
    [R2_FENCE_KEY_META]: key,
    [R2_FENCE_TOKEN_META]: padToken(presented),
  };
  for (let attempt = 0; attempt < attempts; attempt++) {
    const head = await bucket.head(objectKey);
    if (head !== null && head.customMetadata?.[R2_FENCE_KEY_META] === key) {
      checkToken(key, presented, parseStoredToken(head.customMetadata[R2_FENCE_TOKEN_META]));
    }
    const onlyIf = head === null ? { etagDoesNotMatch: "*" } : { etagMatches: head.etag };
    const written = await bucket.put(objectKey, body, {
      onlyIf,
      customMetadata,
      ...(options.httpMetadata === undefined ? {} : { httpMetadata: options.httpMetadata }),
    });
    if (written !== null) return written;
  }
  throw new Error(
    `fencedPut: ${JSON.stringify(objectKey)} changed under ${attempts} attempts in a row (token ${formatCounter(presented)})`,
  );
}

function isOneShot(body: unknown): boolean {
  return typeof ReadableStream !== "undefined" && body instanceof ReadableStream;
}
