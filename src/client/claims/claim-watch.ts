/**
 * The claim watch behind `HttpClaimsBackend.watchClaim`: what a claim watch adds to the
 * reconnecting watch socket (transport/watch-socket.ts).
 *
 * Guarantees:
 * - Yields a snapshot first (unless started with `afterVersion`), then events in version
 *   order. Every reconnect resumes with `afterVersion = <last version received>`, so the
 *   server replays exactly what was missed (no gap), and an event at or below that version
 *   is never yielded twice (no duplicate).
 * - When the server's history no longer reaches the resume point, its `truncated` snapshot
 *   is passed on (`truncated: true`): events were missed and the snapshot is the new
 *   baseline. A resumed snapshot that is neither truncated nor newer is not yielded again.
 * - Acknowledges with `{"type":"ack","version":"N"}`, N = the version of the last event the
 *   consumer took (docs/protocol.md#operating-at-scale).
 *
 * Does not: decide when to reconnect or acknowledge (the watch socket does).
 */
import type { z } from "zod";
import type { ClaimWatchMessage, claimWatchClientMessageSchema } from "../../protocol/claims.ts";
import type { Receipt, WatchAdapter } from "../transport/watch-socket.ts";
import type { ClaimWatchItem } from "./claims-backend.ts";

export type ClaimWatchClientMessage = z.output<typeof claimWatchClientMessageSchema>;

export interface ClaimResumeOptions {
  /** Watch URL for a resume point (undefined: start with a snapshot). */
  url: (afterVersion: bigint | undefined) => string;
  /** Tells a permanent refusal from a transient failure (see watch-socket.ts). */
  probe: (signal: AbortSignal) => Promise<void>;
  afterVersion: bigint | undefined;
}

/** Resume point, de-duplication and acknowledgement of one claim watch. */
export class ClaimResume implements WatchAdapter<ClaimWatchMessage, ClaimWatchClientMessage, ClaimWatchItem> {
  /** The version of the last item received: the resume point. */
  private lastVersion: bigint | undefined;
  private lastTaken: bigint | undefined;
  private snapshotDelivered = false;

  constructor(private readonly options: ClaimResumeOptions) {
    this.lastVersion = options.afterVersion;
  }

  url(): string {
    return this.options.url(this.lastVersion);
  }

  probe(signal: AbortSignal): Promise<void> {
    return this.options.probe(signal);
  }

  receive(message: ClaimWatchMessage): Receipt<ClaimWatchItem> {
    // Anything at all from the server proves the connection works.
    if (message.type === "pong") return { items: [], event: false, established: true };
    if (message.type === "snapshot") {
      const version = message.claim?.version ?? 0n;
      const truncated = message.truncated === true;
      // A resumed connection that lost nothing may re-send the baseline: not news.
      const news = !this.snapshotDelivered || truncated || this.lastVersion === undefined || version > this.lastVersion;
      this.lastVersion = version;
      if (!news) return { items: [], event: false, established: true };
      this.snapshotDelivered = true;
      return { items: [{ type: "snapshot", claim: message.claim, truncated }], event: false, established: true };
    }
    if (this.lastVersion !== undefined && message.claim.version <= this.lastVersion) {
      return { items: [], event: true, established: true }; // replayed twice
    }
    this.lastVersion = message.claim.version;
    const { reason, claim, timeMs, note } = message;
    const item: ClaimWatchItem = { type: "event", reason, claim, timeMs, ...(note === undefined ? {} : { note }) };
    return { items: [item], event: true, established: true };
  }

  taken(item: ClaimWatchItem): void {
    if (item.type === "event") this.lastTaken = item.claim.version;
  }

  ack(): ClaimWatchClientMessage | undefined {
    return this.lastTaken === undefined ? undefined : { type: "ack", version: this.lastTaken };
  }
}
