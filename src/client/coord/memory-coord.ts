/**
 * `MemoryCoordinator`: an in-process {@link Coordinator} for users' own tests, built on the
 * same pure machine as the Durable Object (`src/core/scope-machine.ts`).
 *
 * Guarantees:
 * - Same rules, same refusal codes and same values as the service: FIFO waiting,
 *   `lease_held` when `waitMs` passes, epochs +1 per grant, publish CAS → `stale_generation`,
 *   keyed scopes `unsupported` for snapshot/watch/refresh/publish, `lease_lost` after release
 *   or expiry. Requests are validated with the server's own schemas, and every value crosses
 *   the same wire encoding (roots are copied as JSON), so tests cannot depend on aliasing.
 * - Time comes from the injected {@link Clock}: lease expiry and waiter timeouts fire when
 *   a `ManualClock` is advanced past them, exactly as the Durable Object's alarm does.
 * - Leases are `WriteLease`s with the real keepalive loop, so loss detection behaves as
 *   against the service.
 * - Watches replay retained publishes (the last `historyLimit`, default 256) after
 *   `afterGeneration`, or one `replay` event when history does not reach back; events are
 *   never dropped (the buffer is unbounded).
 *
 * Does not: persist anything, or share state between instances (share one instance).
 */
import { systemClock, type Clock } from "../../core/clock.ts";
import { inProcess } from "../in-process.ts";
import { planReplay } from "../../core/scope-replay.ts";
import { eventToWire, type CoordEvent as WireCoordEvent, type ScopeId } from "../../protocol/coord.ts";
import { RETAINED_EVENTS } from "../../protocol/watch.ts";
import { ShiftlockError } from "../../protocol/errors.ts";
import type { RouteResult, RouteSpec } from "../../protocol/route.ts";
import { SCOPE_ROUTE_FAMILIES } from "../../protocol/scope-routes.ts";
import { scopeResultToResponse } from "../../core/scope-response.ts";
import type { WireResponse } from "../../protocol/wire-response.ts";
import { decodeAnswer, encodeBody } from "../transport/route-codec.ts";
import { decideScope, type ScopeCommand, type ScopeResult } from "../../core/scope-machine.ts";
import { emptyScopeState, leaseHeldDetails, nextDeadlineMs, type ScopeState } from "../../core/scope-state.ts";
import {
  checkAcquireOptions,
  checkScope,
  keyedUnsupported,
  leaseHolderOf,
  scopeRoutes,
  type CheckedScope,
} from "./coord-scope.ts";
import type {
  AcquireOptions,
  CallOptions,
  Capability,
  CoordEvent,
  CoordWatch,
  Coordinator,
  EvictOptions,
  PublishRequest,
  Scope,
  Snapshot,
  TryAcquireResult,
  WaitAcquireOptions,
  WriteLease,
} from "./coord-types.ts";
import { publishBody, toClientEvent } from "./coord-values.ts";
import { MemoryWatch } from "./memory-coord-watch.ts";
import { scopeListKey } from "../../core/listing-cursor.ts";
import { formatCounter } from "../../protocol/counter.ts";
import { listScopes } from "../../protocol/listing-routes.ts";
import type { ScopeSummary } from "../../protocol/listing.ts";
import { followCursors, memoryPage, type PageOptions } from "../listing.ts";
import { HeldWriteLease, type LeaseDriver, type LeaseGrant, type LeaseTimingOptions } from "./write-lease.ts";
import { MemoryAlarms } from "../memory-alarms.ts";

export interface MemoryCoordinatorOptions extends LeaseTimingOptions {
  /** Time source for expiry, waiter timeouts and keepalives. Default: the system clock. */
  clock?: Clock;
  /** Publishes retained per scope for watch replay (default 256, as the service). */
  historyLimit?: number;
  /** The namespace the coordinator stands for; only fence keys show it. Default `"memory"`. */
  namespace?: string;
}

interface PendingWait {
  resolve: (grant: { lease: LeaseGrant; grantedAtMs: number }) => void;
  reject: (err: unknown) => void;
}

interface ScopeEntry {
  state: ScopeState;
  watchers: Set<MemoryWatch>;
  history: { event: WireCoordEvent; previousGeneration: bigint }[];
  pending: Map<string, PendingWait>;
  /** The scope's key among the coordinator's scopes (and its alarm's). */
  name: string;
}

export class MemoryCoordinator implements Coordinator {
  private readonly clock: Clock;
  private readonly historyLimit: number;
  private readonly timing: LeaseTimingOptions;
  private readonly scopes = new Map<string, ScopeEntry>();
  private readonly alarms: MemoryAlarms;
  private readonly namespace: string;

  constructor(options: MemoryCoordinatorOptions = {}) {
    this.clock = options.clock ?? systemClock;
    this.alarms = new MemoryAlarms(this.clock);
    this.namespace = options.namespace ?? "memory";
    this.historyLimit = options.historyLimit ?? RETAINED_EVENTS;
    this.timing = { safetyMarginMs: options.safetyMarginMs, releaseTimeoutMs: options.releaseTimeoutMs };
  }

  capability(scope: Scope, opts: CallOptions = {}): Promise<Capability> {
    return inProcess(opts.signal, () => {
      const checked = checkScope(scope);
      const result = this.apply(this.entry(checked), { kind: "capability" });
      return { ...answer(scopeRoutes(checked).capability, result), backend: "in-memory" };
    });
  }

  snapshot(scope: Scope, opts: CallOptions = {}): Promise<Snapshot> {
    return inProcess(opts.signal, () => {
      const checked = checkScope(scope);
      if (checked.keyed) throw keyedUnsupported("snapshot");
      return answer(scopeRoutes(checked).snapshot, this.apply(this.entry(checked), { kind: "snapshot" }));
    });
  }

  watch(scope: Scope, afterGeneration: bigint, opts: CallOptions = {}): Promise<CoordWatch> {
    return inProcess(opts.signal, () => {
      const checked = checkScope(scope);
      if (checked.keyed) throw keyedUnsupported("watch");
      const entry = this.entry(checked);
      this.apply(entry, { kind: "expire" }); // bring the scope up to date before replaying
      // As over HTTP: a resume point past the current generation falls back to it.
      const from = afterGeneration < entry.state.generation ? afterGeneration : entry.state.generation;
      const watch = new MemoryWatch(from, () => entry.watchers.delete(watch));
      entry.watchers.add(watch);
      for (const event of this.replay(entry, afterGeneration)) watch.deliver(event);
      const signal = opts.signal;
      signal?.addEventListener("abort", () => watch.fail(signal.reason), { once: true });
      return watch;
    });
  }

  tryAcquireWriteLease(scope: Scope, opts: AcquireOptions = {}): Promise<TryAcquireResult> {
    return inProcess(opts.signal, () => {
      const checked = checkScope(scope, "required");
      const ttlMs = checkAcquireOptions(checked, opts.ttlMs, undefined);
      const entry = this.entry(checked);
      const leaseId = crypto.randomUUID();
      const result = this.apply(entry, acquire(checked, ttlMs, 0, leaseId, crypto.randomUUID()));
      if (!result.ok && result.refusal.code === "lease_held") {
        return { acquired: false, lease: undefined, holder: leaseHolderOf(result.refusal.details) };
      }
      const { lease } = answer(scopeRoutes(checked).acquire, result);
      return { acquired: true, lease: this.lease(entry, checked, lease, ttlMs, this.clock.nowMs(), opts) };
    });
  }

  async waitAcquireWriteLease(scope: Scope, opts: WaitAcquireOptions = {}): Promise<WriteLease> {
    opts.signal?.throwIfAborted();
    const checked = checkScope(scope, "required");
    const ttlMs = checkAcquireOptions(checked, opts.ttlMs, opts.waitMs);
    const entry = this.entry(checked);
    const waiterId = crypto.randomUUID();
    const granted = new Promise<{ lease: LeaseGrant; grantedAtMs: number }>((resolve, reject) =>
      entry.pending.set(waiterId, { resolve, reject }),
    );
    // An absent waitMs waits until the signal aborts (the machine never times it out).
    const waitMs = opts.waitMs ?? Number.POSITIVE_INFINITY;
    const result = this.apply(entry, acquire(checked, ttlMs, waitMs, crypto.randomUUID(), waiterId));
    if (!result.ok || result.kind === "granted") {
      entry.pending.delete(waiterId);
      const { lease } = answer(scopeRoutes(checked).acquire, result);
      return this.lease(entry, checked, lease, ttlMs, this.clock.nowMs(), opts);
    }
    if (waitMs === 0) {
      entry.pending.delete(waiterId);
      throw new ShiftlockError("lease_held");
    }
    const signal = opts.signal;
    const onAbort = (): void => {
      const pending = entry.pending.get(waiterId);
      if (pending === undefined) return; // already granted or timed out
      entry.pending.delete(waiterId);
      this.apply(entry, { kind: "cancelWait", waiterId });
      pending.reject(signal?.reason);
    };
    signal?.addEventListener("abort", onAbort, { once: true });
    try {
      const grant = await granted;
      return this.lease(entry, checked, grant.lease, ttlMs, grant.grantedAtMs, opts);
    } finally {
      signal?.removeEventListener("abort", onAbort);
    }
  }

  /** The eviction route's rules (docs/protocol.md#eviction), decided by the scope machine. */
  evict(scope: Scope, opts: EvictOptions = {}): Promise<Snapshot> {
    return inProcess(opts.signal, () => {
      const checked = checkScope(scope);
      const route = scopeRoutes(checked).evict;
      encodeBody(route, { note: opts.note });
      return answer(route, this.apply(this.entry(checked), { kind: "evict", note: opts.note }));
    });
  }

  /**
   * End a lease as if the service had lost it (for testing loss handling): the holder's next
   * keepalive is refused with `lease_lost` and the next waiter is granted. Idempotent.
   */
  revokeLease(scope: Scope, leaseId: string): void {
    this.apply(this.entry(checkScope(scope)), { kind: "release", leaseId });
  }

  listScopes(filter: { volumeId?: string | undefined } = {}, opts: PageOptions = {}): AsyncIterable<ScopeSummary> {
    return followCursors(async (cursor) => {
      opts.signal?.throwIfAborted();
      await Promise.resolve();
      // A scope the index would know: one whose state was ever saved (every save follows a grant).
      const items = [...this.scopes.values()]
        .filter((e) => e.state.epoch > 0n)
        .map(({ state }) => ({
          key: scopeListKey(state.scope),
          wire: {
            ...state.scope,
            generation: formatCounter(state.generation),
            held: state.holder !== null,
            holder: state.holder?.participantId ?? "",
            wantLock: state.waiters.length > 0,
            leaseExpiresAtMs: state.holder?.expiresAtMs ?? 0,
          },
        }));
      const page = memoryPage({
        route: listScopes,
        field: "scopes",
        scope: { namespace: "", list: "scopes", filters: [filter.volumeId] },
        query: { volumeId: filter.volumeId, limit: opts.limit, cursor },
        items,
        keep: (w) => filter.volumeId === undefined || w.volumeId === filter.volumeId,
      });
      return { items: page.scopes, cursor: page.cursor };
    });
  }

  /** Stop every timer and end every watch (the coordinator is unusable afterwards). */
  close(): void {
    this.alarms.close();
    for (const entry of this.scopes.values()) {
      for (const watch of [...entry.watchers]) watch.close();
      for (const pending of entry.pending.values())
        pending.reject(new ShiftlockError("lease_lost", "coordinator closed"));
      entry.pending.clear();
    }
    this.scopes.clear();
  }

  // ------------------------------------------------------------------------------------

  private entry(scope: CheckedScope): ScopeEntry {
    const id: ScopeId = { volumeId: scope.volumeId, objectStoreId: scope.objectStoreId, key: scope.key };
    const name = JSON.stringify([id.volumeId, id.objectStoreId, id.key]);
    let entry = this.scopes.get(name);
    if (entry === undefined) {
      entry = { state: emptyScopeState(id), watchers: new Set(), history: [], pending: new Map(), name };
      this.scopes.set(name, entry);
    }
    return entry;
  }

  /** One step of the machine: the Durable Object's load → decide → save → alarm → publish. */
  private apply(entry: ScopeEntry, command: ScopeCommand): ScopeResult {
    const nowMs = this.clock.nowMs();
    const step = decideScope(entry.state, command, nowMs);
    entry.state = step.next;
    if (step.published !== undefined) {
      entry.history.push(step.published);
      if (entry.history.length > this.historyLimit) entry.history.splice(0, entry.history.length - this.historyLimit);
    }
    this.arm(entry);
    for (const grant of step.granted) {
      const pending = entry.pending.get(grant.waiterId);
      entry.pending.delete(grant.waiterId);
      pending?.resolve({ lease: { ...grant.lease }, grantedAtMs: nowMs });
    }
    for (const waiterId of step.timedOut) {
      const pending = entry.pending.get(waiterId);
      entry.pending.delete(waiterId);
      pending?.reject(
        new ShiftlockError("lease_held", "write lease is held (waitMs passed)", leaseHeldDetails(step.next)),
      );
    }
    for (const event of step.events) {
      const decoded = overTheWire(event);
      for (const watch of entry.watchers) watch.deliver(decoded);
    }
    return step.result;
  }

  /** Re-arm the scope's alarm to its earliest deadline (lease expiry or waiter timeout). */
  private arm(entry: ScopeEntry): void {
    this.alarms.arm(entry.name, nextDeadlineMs(entry.state), () => {
      this.apply(entry, { kind: "expire" });
    });
  }

  private replay(entry: ScopeEntry, afterGeneration: bigint): CoordEvent[] {
    const retained = entry.history.map((h) => ({ ...h, generation: h.event.generation }));
    const plan = planReplay(entry.state, retained, afterGeneration);
    if (plan.kind === "none") return [];
    if (plan.kind === "summary") return [overTheWire(plan.event)];
    return retained.slice(plan.fromIndex).map((h) => overTheWire(h.event));
  }

  private lease(
    entry: ScopeEntry,
    scope: CheckedScope,
    grant: LeaseGrant,
    ttlMs: number,
    grantedAtMs: number,
    opts: AcquireOptions,
  ): WriteLease {
    const routes = scopeRoutes(scope);
    const leaseId = grant.leaseId;
    const driver: LeaseDriver = {
      keepalive: (keepaliveTtlMs) =>
        inProcess(undefined, () => {
          encodeBody(routes.keepalive, { ttlMs: keepaliveTtlMs });
          return answer(routes.keepalive, this.apply(entry, { kind: "keepalive", leaseId, ttlMs: keepaliveTtlMs }));
        }),
      refresh: () =>
        inProcess(undefined, () => answer(routes.refresh, this.apply(entry, { kind: "refresh", leaseId }))),
      publish: (req) => inProcess(undefined, () => answer(routes.publish, this.publish(entry, leaseId, req))),
      release: () =>
        inProcess(undefined, () => answer(routes.release, this.apply(entry, { kind: "release", leaseId }))),
    };
    return new HeldWriteLease({
      namespace: this.namespace,
      scope,
      grant,
      ttlMs,
      requestedAtMs: grantedAtMs,
      driver,
      clock: this.clock,
      onWantLock: opts.onWantLock,
      ...this.timing,
    });
  }

  /** Validate a publish with the route's schema (as the HTTP client does), then apply it. */
  private publish(entry: ScopeEntry, leaseId: string, req: PublishRequest): ScopeResult {
    const body = publishBody(req);
    encodeBody(SCOPE_ROUTE_FAMILIES.store.publish, body);
    return this.apply(entry, {
      kind: "publish",
      leaseId,
      generation: body.generation,
      expectedGeneration: body.expectedGeneration,
      ...("root" in body ? { root: { value: cloneJson(body.root) } } : {}),
      keyPrefixChanged: body.keyPrefixChanged,
    });
  }
}

function acquire(scope: CheckedScope, ttlMs: number, waitMs: number, leaseId: string, waiterId: string): ScopeCommand {
  return { kind: "acquire", participantId: scope.participantId, ttlMs, waitMs, leaseId, waiterId };
}

/**
 * A machine result as the HTTP client would see it: rendered to the wire answer the Durable
 * Object sends, then decoded by the route's schema with the HTTP client's own function.
 */
function answer<R extends RouteSpec>(route: R, result: ScopeResult): RouteResult<R> {
  return decodeAnswer(route, JSON.parse(JSON.stringify(scopeResultToResponse(result))) as WireResponse);
}

/** An event as a watcher over HTTP decodes it: through its wire text (a deep copy), with the route's schema. */
function overTheWire(event: WireCoordEvent): CoordEvent {
  const message = WATCH_MESSAGES.parse(JSON.parse(JSON.stringify(eventToWire(event))));
  if (message.type !== "event") throw new ShiftlockError("internal", `unexpected watch message ${message.type}`);
  return toClientEvent(message);
}

const WATCH_MESSAGES = SCOPE_ROUTE_FAMILIES.store.watch.websocket.server;

function cloneJson(value: unknown): unknown {
  return value === undefined ? undefined : (JSON.parse(JSON.stringify(value)) as unknown);
}
