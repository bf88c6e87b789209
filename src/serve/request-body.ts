/**
 * A caller's request body as the Node front of `npm start` handles it: read a bounded head
 * before anything goes upstream, and after the answer, read and drop the rest (bounded too).
 *
 * Why: the Worker reads at most {@link BODY_LIMIT_BYTES} + 1 bytes of any body (anything
 * longer is `payload_too_large`, refused on its declared length or once one byte too many
 * arrived), and it answers as soon as it knows. workerd then closes a connection whose body
 * it did not read, and one with much still to come is reset — taking the answer with it
 * (measured: a 1 MiB or 10 MiB body sent straight through gave the front `ECONNRESET` and no
 * answer). So the front sends upstream at most the head, which is all the Worker would read
 * anyway, and deals with the rest of the body itself.
 *
 * Guarantees:
 * - {@link readHead} reads at most `maxBytes` of the body and pauses the caller there; the
 *   head is complete when the body ended within it.
 * - {@link dropRest} reads and discards what the caller still sends, up to
 *   {@link MAX_BODY_READ_BYTES} of body in all (the head included), so the kept-alive
 *   connection serves the caller's next request. A body longer than that has its connection
 *   destroyed once that much was read: the caller has had its answer long before (dropping
 *   starts only after the answer was sent), and the front does not read without bound.
 *
 * Does not: look at the bytes, or decide anything about them (the Worker does).
 */
import type { IncomingMessage } from "node:http";
import { BODY_LIMIT_BYTES } from "../http/body.ts";

/** The most of a body the front sends upstream: one byte over the limit is enough to be refused. */
export const UPSTREAM_BODY_MAX_BYTES = BODY_LIMIT_BYTES + 1;

/**
 * The most of one request's body the front reads (the head, then what it drops after the
 * answer): 16 MiB, 256 times the limit. Beyond it the connection is closed.
 */
export const MAX_BODY_READ_BYTES = 16 * 1024 * 1024;

export interface BodyHead {
  /** At most `maxBytes` of the body, in order. */
  head: Buffer;
  /** True when the body ended within the head (the head is the whole body). */
  complete: boolean;
  /** Bytes of body read so far: the head, and the part of the last chunk past it (dropped). */
  read: number;
}

/**
 * Read the body until it ends or holds more than `maxBytes`; in the second case the caller
 * is paused (its connection waits) and the bytes past `maxBytes` already read are dropped.
 * Rejects when the caller goes away meanwhile.
 */
export function readHead(req: IncomingMessage, maxBytes: number): Promise<BodyHead> {
  return new Promise<BodyHead>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let kept = 0;
    const done = (): void => {
      req.off("data", onData);
      req.off("end", onEnd);
      req.off("error", onError);
      req.off("close", onClose);
    };
    const onData = (chunk: Buffer): void => {
      const room = maxBytes - kept;
      if (chunk.length <= room) {
        chunks.push(chunk);
        kept += chunk.length;
        return;
      }
      req.pause();
      done();
      chunks.push(chunk.subarray(0, room));
      resolve({ head: Buffer.concat(chunks), complete: false, read: kept + chunk.length });
    };
    const onEnd = (): void => {
      done();
      resolve({ head: Buffer.concat(chunks), complete: true, read: kept });
    };
    const onError = (err: Error): void => {
      done();
      reject(err);
    };
    const onClose = (): void => {
      done();
      reject(new Error("the caller went away before its body ended"));
    };
    req.on("data", onData);
    req.on("end", onEnd);
    req.on("error", onError);
    req.on("close", onClose);
  });
}

/**
 * Read and discard the rest of a body of which `read` bytes were read already, until it
 * ends or {@link MAX_BODY_READ_BYTES} were read in all; then destroy the caller's connection.
 */
export function dropRest(req: IncomingMessage, read: number): void {
  let total = read;
  const over = (): boolean => total > MAX_BODY_READ_BYTES;
  if (over()) {
    req.socket.destroy();
    return;
  }
  req.on("data", (chunk: Buffer) => {
    total += chunk.length;
    if (over()) req.socket.destroy();
  });
  req.on("error", () => undefined);
  req.resume();
}
