/**
 * The coord watch behind `HttpCoordinator.watch`: what a coord watch adds to the
 * reconnecting watch socket (transport/watch-socket.ts).
 *
 * Guarantees:
 * - `ready` (the socket's first established connection) resolves when the server confirmed
 *   the registration (`{"type":"ready"}`), so nothing that happens afterwards is missed.
 * - Events come in server order. Every reconnect resumes with `afterGeneration = <highest
 *   generation seen>`, so the server replays every publish that was missed; a publish at or
 *   below that generation is never yielded twice. A resume point beyond the server's
 *   current generation (a reset server) falls back to the server's, so later publishes are
 *   not hidden.
 * - `wantLock` and `unlocked` are not history: the server replays publishes only, so such
 *   events emitted while the watch was disconnected are gone for good, and the client cannot
 *   tell whether there were any. On every reconnect the watch therefore yields one synthetic
 *   hint `{wantLock: true, unlocked: true, resumed: true}` (at the resume generation, before
 *   anything the new connection delivers): a holder should treat it as a possible waiter
 *   and a would-be writer as a possibly free lease — re-check, as for any hint.
 * - Acknowledges with `{"type":"ack","count":N}`, N = events processed since the last ack
 *   (docs/protocol.md#operating-at-scale).
 *
 * Does not: say whether a hint was real (events are hints; the snapshot and the lease
 * calls are the truth), or decide when to reconnect or acknowledge (the socket does).
 */
import type { z } from "zod";
import type { coordWatchClientMessageSchema, WatchMessage } from "../../protocol/coord.ts";
import type { Receipt, WatchAdapter, WatchSocket } from "../transport/watch-socket.ts";
import type { CoordEvent, CoordWatch } from "./coord-types.ts";
import { toClientEvent } from "./coord-values.ts";

export type CoordWatchClientMessage = z.output<typeof coordWatchClientMessageSchema>;

export interface CoordResumeOptions {
  /** Watch URL for a resume point. */
  url: (afterGeneration: bigint) => string;
  /** Tells a permanent refusal from a transient failure (see watch-socket.ts). */
  probe: (signal: AbortSignal) => Promise<void>;
  afterGeneration: bigint;
  /** The scope, for the synthetic hint. */
  volumeId: string;
  objectStoreId: string;
}

/** Resume point, de-duplication, missed-hint signal and acknowledgement of one coord watch. */
export class CoordResume implements WatchAdapter<WatchMessage, CoordWatchClientMessage, CoordEvent> {
  private last: bigint;

  constructor(private readonly options: CoordResumeOptions) {
    this.last = options.afterGeneration;
  }

  /** The generation after which events are wanted next (the highest seen so far). */
  get afterGeneration(): bigint {
    return this.last;
  }

  url(): string {
    return this.options.url(this.last);
  }

  probe(signal: AbortSignal): Promise<void> {
    return this.options.probe(signal);
  }

  receive(message: WatchMessage, resumed: boolean): Receipt<CoordEvent> {
    if (message.type === "pong") return { items: [], event: false, established: false };
    if (message.type === "ready") {
      // Resuming past the server's current generation would hide its next publishes.
      if (message.generation < this.last) this.last = message.generation;
      return { items: resumed ? [this.missedHints()] : [], event: false, established: true };
    }
    const publish = !message.wantLock && !message.unlocked;
    if (publish && message.generation <= this.last) return { items: [], event: true, established: false };
    const event = toClientEvent(message);
    if (event.generation > this.last) this.last = event.generation;
    return { items: [event], event: true, established: false };
  }

  taken(): void {}

  ack(count: number): CoordWatchClientMessage {
    return { type: "ack", count };
  }

  /** The hint that stands for whatever wantLock/unlocked events the gap swallowed. */
  private missedHints(): CoordEvent {
    return {
      processId: "",
      volumeId: this.options.volumeId,
      objectStoreId: this.options.objectStoreId,
      generation: this.last,
      wantLock: true,
      unlocked: true,
      rootChanged: undefined,
      keyPrefixChanged: undefined,
      fallbackReason: "",
      resumed: true,
    };
  }
}

/** The `CoordWatch` of the HTTP coordinator: a watch socket and its resume state. */
export class HttpCoordWatch implements CoordWatch {
  constructor(
    private readonly resume: CoordResume,
    private readonly socket: WatchSocket<WatchMessage, CoordWatchClientMessage, CoordEvent>,
  ) {}

  /** Resolves when the server registered the watch; rejects when it could not be established. */
  get ready(): Promise<void> {
    return this.socket.established;
  }

  get afterGeneration(): bigint {
    return this.resume.afterGeneration;
  }

  close(): void {
    this.socket.close();
  }

  [Symbol.asyncIterator](): AsyncIterator<CoordEvent> {
    return this.socket[Symbol.asyncIterator]();
  }
}
