/**
 * The coord client's public types: the spacewave `Coordinator` interface (Go) in TypeScript (docs/protocol.md#coord, #the-typescript-client).
 *
 * Guarantees (every implementation: HTTP, in-memory, unsupported):
 * - Counters (`generation`, `epoch`) are `bigint`; times are epoch milliseconds.
 * - Failures reject with `ShiftlockError` carrying a protocol error code: `unsupported` (the Go interface's
 *   ErrUnsupported), `lease_lost` (ErrLeaseReleased), `lease_held`, `stale_generation`, and
 *   `invalid_request` for a scope with neither store nor key (test with `isScopeEmpty`).
 * - A busy lease is a value (`acquired: false`), never an error, for `tryAcquireWriteLease`.
 *
 * Does not: make events authoritative. Watch events are hints (a reconnecting watch cannot
 * replay `wantLock`/`unlocked` events and yields a synthetic `resumed` hint instead); the
 * snapshot is the truth.
 */
import type { ScopeSummary } from "../../protocol/listing.ts";
import type { PageOptions } from "../listing.ts";
import type { FenceCredential } from "../fence/fence-key.ts";

/**
 * What a coordination call is about. Identity is (volumeId, objectStoreId, key);
 * `participantId` only says who acts (it becomes `processId` in the events it causes).
 */
export interface Scope {
  volumeId: string;
  /** ObjectStore inside the volume; with no `key` the scope is an object-store scope. */
  objectStoreId?: string | undefined;
  /** A caller-chosen exclusion subject: the scope is keyed (lease only, no generations). */
  key?: string | undefined;
  participantId: string;
}

/** Which backend coordinates a scope. */
export type BackendKind = "durable-object" | "in-memory" | "unsupported" | (string & {});

/** Why direct coordination is unavailable; `""` when it is available. */
export type FallbackReason = "" | "unsupported" | "descriptor-invalid" | "descriptor-stale" | (string & {});

/** What a scope supports (the Go interface's `Capability`). */
export interface Capability {
  /** Direct coordination is available for this scope. */
  supported: boolean;
  backend: BackendKind;
  volumeId: string;
  objectStoreId: string;
  /** Latest durable generation (0 for keyed scopes and unsupported backends). */
  generation: bigint;
  /** The scope has generations, snapshot, publish and watch (object-store scopes). */
  generations: boolean;
  /** `done`/`signal` also fire on involuntary loss, not only on release. */
  detectsLoss: boolean;
  fallbackReason: FallbackReason;
}

/** The durable state of an object-store scope. */
export interface Snapshot {
  volumeId: string;
  objectStoreId: string;
  /** Starts at 0; only `publish` advances it. */
  generation: bigint;
  /** The last published root (any JSON value), `null` until one was published. */
  root: unknown;
}

/** One watch event (the Go interface's `Event`). Flags tell the kind; several may be set. */
export interface CoordEvent {
  /** Participant that caused the event; `""` on replays. */
  processId: string;
  volumeId: string;
  objectStoreId: string;
  /** The generation the event belongs to (the current one for wantLock/unlocked). */
  generation: bigint;
  /** Somebody is waiting for (or tried to take) the lease. */
  wantLock: boolean;
  /** The lease was released or expired. */
  unlocked: boolean;
  /** With `unlocked`: the lease ended by expiry rather than release. */
  expired?: boolean | undefined;
  /** With `unlocked`: an operator evicted the holder (docs/protocol.md#eviction). */
  evicted?: boolean | undefined;
  /** With `evicted`: the operator's note, when one was given. */
  note?: string | undefined;
  /**
   * The one catch-up event sent when the server's history no longer reaches
   * `afterGeneration`: it carries the current generation, root and last key prefix.
   */
  replay?: boolean | undefined;
  /**
   * Made by the client, not the server: the watch reconnected, and `wantLock`/`unlocked`
   * events of the gap cannot be replayed, so this event (with both flags set, at the resume
   * generation) stands in for any it missed. Treat it as a hint like the others.
   */
  resumed?: boolean | undefined;
  /** The root accepted by a publish (or the current root on a replay); undefined when unchanged. */
  rootChanged: unknown;
  /** The key prefix a publish invalidated (or the last one, on a replay). */
  keyPrefixChanged: Uint8Array | undefined;
  fallbackReason: FallbackReason;
}

/** Per-call options. `signal` stands in for Go's context. */
export interface CallOptions {
  signal?: AbortSignal | undefined;
}

/** Options of {@link Coordinator.evict}. */
export interface EvictOptions extends CallOptions {
  /** The operator's text, at most 256 bytes of UTF-8; the `unlocked` event carries it. */
  note?: string | undefined;
}

/** Options of the acquire calls. */
export interface AcquireOptions extends CallOptions {
  /** Lease duration in ms, 100 … 86,400,000 (default 15,000). Keepalive runs every ttl/3. */
  ttlMs?: number | undefined;
  /** Called (at most once per keepalive) when the server says another participant is waiting. */
  onWantLock?: (() => void) | undefined;
}

/** Options of `waitAcquireWriteLease`. */
export interface WaitAcquireOptions extends AcquireOptions {
  /** Give up after this many ms with `lease_held`; absent = wait until `signal` aborts. */
  waitMs?: number | undefined;
}

/** What `publish` records. */
export interface PublishRequest {
  /** Jump the generation to this value when it is greater than the current one (else current+1). */
  generation?: bigint | undefined;
  /** Compare-and-swap: refuse with `stale_generation` unless the current generation equals this. */
  expectedGeneration?: bigint | undefined;
  /** New root (any JSON value, ≤ 16 KiB serialized); absent keeps the current root. */
  root?: unknown;
  /** Key prefix the change invalidated; becomes the scope's last prefix. */
  keyPrefixChanged?: Uint8Array | undefined;
}

/** A held write lease (the Go interface's `WriteLease`). Obtain it from a `Coordinator`. */
export interface WriteLease extends AsyncDisposable {
  readonly scope: Readonly<Scope>;
  readonly leaseId: string;
  /** Fencing token: per scope, +1 on every grant, never reused. Pass it to the storage you protect. */
  readonly epoch: bigint;
  /**
   * The fence to write under (shiftlock/fence): key `{ns}/scopes/{volumeId}/{objectStoreId}/{key}`
   * (parts percent-encoded), token `epoch`, and the `Shiftlock-Fence` header value.
   */
  readonly fence: FenceCredential;
  /** Server-clock expiry as last confirmed by the server (informational; loss is judged locally, earlier). */
  readonly expiresAtMs: number;
  /** Whether the last keepalive reported a waiting participant. */
  readonly wantLock: boolean;
  /** Resolves (never rejects) on release or involuntary loss. */
  readonly done: Promise<void>;
  /** Aborts on release or involuntary loss (reason: the loss error, or a `lease_lost` for release). */
  readonly signal: AbortSignal;
  /** The loss error (code `lease_lost`); undefined while held and after a clean release. */
  readonly err: Error | undefined;
  /** The latest durable generation and root, read under the lease. */
  refresh(opts?: CallOptions): Promise<Snapshot>;
  /** Record a new generation/root/prefix; returns the snapshot after the change. */
  publish(req: PublishRequest, opts?: CallOptions): Promise<Snapshot>;
  /** Give the lease up. Ignores cancellation (bounded by its own timeout) and is idempotent. */
  release(opts?: CallOptions): Promise<void>;
}

/**
 * Result of `tryAcquireWriteLease`: busy is a value, not an error. `holder` is the participant
 * holding the lease when the server refused (`""` if it did not say).
 */
export type TryAcquireResult =
  { acquired: true; lease: WriteLease } | { acquired: false; lease: undefined; holder: string };

/** A live watch: iterate it for events; `close()` (or the signal) ends the iteration. */
export interface CoordWatch extends AsyncIterable<CoordEvent> {
  /** The generation after which events are wanted next (the highest seen so far). */
  readonly afterGeneration: bigint;
  close(): void;
}

/** The Go interface's `Coordinator`. */
export interface Coordinator {
  capability(scope: Scope, opts?: CallOptions): Promise<Capability>;
  /** Object-store scopes only (`unsupported` for keyed scopes). */
  snapshot(scope: Scope, opts?: CallOptions): Promise<Snapshot>;
  /**
   * Resolves once the watch is registered (so nothing after that moment is missed). When
   * `afterGeneration` is behind, the first events replay what was published since.
   */
  watch(scope: Scope, afterGeneration: bigint, opts?: CallOptions): Promise<CoordWatch>;
  tryAcquireWriteLease(scope: Scope, opts?: AcquireOptions): Promise<TryAcquireResult>;
  /** Queue first-come first-served until granted, `waitMs` passes (`lease_held`) or `signal` aborts. */
  waitAcquireWriteLease(scope: Scope, opts?: WaitAcquireOptions): Promise<WriteLease>;
  /**
   * Every scope of the namespace that was ever granted a lease, ordered by volume, store and
   * key (UTF-8 bytes), following cursors (docs/protocol.md#listing). Over HTTP from the namespace index (up to
   * 2 s behind); `wantLock` there is as of the scope's last durable change.
   */
  listScopes(filter?: { volumeId?: string | undefined }, opts?: PageOptions): AsyncIterable<ScopeSummary>;
  /**
   * End the current write lease as an operator (docs/protocol.md#eviction; the `admin` role
   * over HTTP): the next waiter is granted with the next epoch, the holder's next keepalive,
   * refresh or publish fails with `lease_lost`, and watchers get an `unlocked` event with
   * `evicted` and the note. A free scope is left as it is. Resolves with the scope's snapshot
   * (generation 0 and root `null` for a keyed scope); `participantId` is not needed.
   * @example
   * await coord.evict({ volumeId: "vol", objectStoreId: "store", participantId: "" }, { note: "INC-123" });
   */
  evict(scope: Scope, opts?: EvictOptions): Promise<Snapshot>;
}

export type { ScopeSummary, PageOptions };
