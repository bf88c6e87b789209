/**
 * `UnsupportedCoordinator`: the coordinator to hand out when a backend has no direct
 * coordination, so callers can ask `capability()` and fall back (docs/protocol.md#coord).
 *
 * Guarantees: `capability()` reports `{supported: false, fallbackReason}` and echoes the
 * scope; every other method rejects with `ShiftlockError` code `unsupported` (the Go interface's
 * ErrUnsupported). An already-aborted signal is reported first, as in the Go interface.
 *
 * Does not: validate the scope (there is nothing to coordinate).
 */
import { inProcess } from "../in-process.ts";
import { ShiftlockError } from "../../protocol/errors.ts";
import type { ScopeSummary } from "../../protocol/listing.ts";
import type {
  AcquireOptions,
  BackendKind,
  CallOptions,
  Capability,
  CoordWatch,
  Coordinator,
  EvictOptions,
  FallbackReason,
  Scope,
  Snapshot,
  TryAcquireResult,
  WaitAcquireOptions,
  WriteLease,
} from "./coord-types.ts";

export interface UnsupportedCoordinatorOptions {
  /** Backend to report; `""`/absent → `"unsupported"`. */
  backend?: BackendKind | undefined;
  /** Reason to report; `""`/absent → `"unsupported"`. */
  reason?: FallbackReason | undefined;
}

/** The message text of the Go interface's ErrUnsupported. */
export const UNSUPPORTED_MESSAGE = "coord: unsupported";

export class UnsupportedCoordinator implements Coordinator {
  readonly backend: BackendKind;
  readonly reason: FallbackReason;

  constructor(opts: UnsupportedCoordinatorOptions = {}) {
    this.backend = opts.backend === undefined || opts.backend === "" ? "unsupported" : opts.backend;
    this.reason = opts.reason === undefined || opts.reason === "" ? "unsupported" : opts.reason;
  }

  capability(scope: Scope, opts: CallOptions = {}): Promise<Capability> {
    return inProcess(opts.signal, () => ({
      supported: false,
      backend: this.backend,
      volumeId: scope.volumeId,
      objectStoreId: scope.objectStoreId ?? "",
      generation: 0n,
      generations: false,
      detectsLoss: false,
      fallbackReason: this.reason,
    }));
  }

  /** Nothing to list: this backend coordinates nothing. */
  async *listScopes(): AsyncIterable<ScopeSummary> {
    // An empty listing (no scope can exist here), not an error.
  }

  snapshot(_scope: Scope, opts: CallOptions = {}): Promise<Snapshot> {
    return inProcess(opts.signal, unsupported);
  }

  watch(_scope: Scope, _afterGeneration: bigint, opts: CallOptions = {}): Promise<CoordWatch> {
    return inProcess(opts.signal, unsupported);
  }

  tryAcquireWriteLease(_scope: Scope, opts: AcquireOptions = {}): Promise<TryAcquireResult> {
    return inProcess(opts.signal, unsupported);
  }

  waitAcquireWriteLease(_scope: Scope, opts: WaitAcquireOptions = {}): Promise<WriteLease> {
    return inProcess(opts.signal, unsupported);
  }

  evict(_scope: Scope, opts: EvictOptions = {}): Promise<Snapshot> {
    return inProcess(opts.signal, unsupported);
  }
}

function unsupported(): never {
  throw new ShiftlockError("unsupported", UNSUPPORTED_MESSAGE);
}
