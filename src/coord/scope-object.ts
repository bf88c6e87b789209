/**
 * One coord scope's Durable Object (docs/protocol.md#coord): the write lease, its waiters, the durable
 * generation/root/prefix, and the watchers.
 *
 * Guarantees:
 * - Every method runs the mutation template (durable/mutation.ts) on the scope's state,
 *   loaded once (cached in memory after the first call; this instance is the only writer):
 *   decide with the pure machine at the object's clock → save in one synchronous transaction
 *   → re-arm the alarm → publish events, then answer waiters, all before the first await;
 *   the alarm write is awaited last.
 * - Waiting acquires are held open here: the RPC's promise settles exactly once, with the
 *   grant, or with `lease_held` when `waitMs` passes (the alarm fires at the deadline) or
 *   when the router reports that the caller went away ({@link ScopeObject.cancelWait}). A
 *   grant whose caller already left is released at once, so the scope is never stranded.
 * - The alarm is one per object, set to the earliest lease expiry or waiter deadline, and
 *   idempotent (early, late or repeated runs decide from the state).
 * - Every durable change stages the scope's summary for the namespace index in the same
 *   transaction; delivery follows, never awaited (durable/index-outbox.ts). `wantLock` in
 *   the index is as of the last durable change (queued waiters live in memory only).
 *
 * Does not: validate request shapes (the router does, from `protocol/coord.ts`) or survive
 * a restart with waiters: queued requests fail with the instance and the queue starts empty.
 */
import { type ScopeId, type PublishBody, isKeyedScope } from "../protocol/coord.ts";
import { parseCounter } from "../protocol/counter.ts";
import type { WriteLeaseAcquireBody } from "../protocol/scope-routes.ts";
import { type ScopeCommand, type ScopeStep, decideScope } from "../core/scope-machine.ts";
import { type ScopeState, leaseHeldDetails, nextDeadlineMs } from "../core/scope-state.ts";
import { leaseHeldResponse, scopeResultToResponse } from "../core/scope-response.ts";
import type { WireResponse } from "../protocol/wire-response.ts";
import { WatchedObject } from "../durable/object-base.ts";
import { meterMethods } from "../durable/object-meter.ts";
import { type ObjectSettings, objectSettings } from "../durable/object-settings.ts";
import { scopeListKey } from "../core/listing-cursor.ts";
import { formatCounter } from "../protocol/counter.ts";
import { ScopeStore } from "./store.ts";
import { PendingWaiters } from "./waiters.ts";
import { ScopeWatchers } from "./watch.ts";

/** Internal query parameters of the watch upgrade the router forwards. */
export const SCOPE_WATCH_PARAMS = { scope: "scope", afterGeneration: "afterGeneration" } as const;

/** Cancelled waiter ids remembered, so a cancel that overtakes its acquire still wins. */
const CANCELLED_REMEMBERED = 1024;

/** Queued acquires one scope holds open at most; beyond it a waiting acquire is 429. */
export const MAX_WAITERS_PER_SCOPE = 10_000;

/** A scope's settings: every object's clock and limits, and its queue bound. */
export interface ScopeSettings extends ObjectSettings {
  /** Queued acquires held open at most ({@link MAX_WAITERS_PER_SCOPE} in production). */
  readonly maxWaiters: number;
}

/** The settings every production scope runs with. */
export function scopeSettings(env: Env): ScopeSettings {
  return { ...objectSettings(env), maxWaiters: MAX_WAITERS_PER_SCOPE };
}

/** A step decided, saved and published, with its alarm write (step 4) still to await. */
interface Decided {
  step: ScopeStep;
  armed: Promise<void>;
}

/**
 * A write-lease acquire as the router hands it over: the route's body, validated, with every
 * default applied (`waiterId` chosen by the router when absent, so it can cancel the wait if
 * its caller disconnects).
 */
export type WriteLeaseAcquire = { [K in keyof WriteLeaseAcquireBody]-?: NonNullable<WriteLeaseAcquireBody[K]> };

export class ScopeObject extends WatchedObject {
  /** The base's settings, with the queue bound (passed in by the constructor below). */
  declare protected readonly settings: ScopeSettings;
  private readonly store: ScopeStore;
  protected override readonly watchers: ScopeWatchers;
  private readonly waiters = new PendingWaiters();
  /** Recently cancelled waiter ids, oldest first (bounded; this instance only). */
  private readonly cancelled = new Set<string>();
  /** The scope's state, including the in-memory waiter queue; loaded on first use. */
  private state: ScopeState | undefined;

  constructor(ctx: DurableObjectState, env: Env, settings: ScopeSettings = scopeSettings(env)) {
    super(ctx, env, settings);
    this.store = new ScopeStore(ctx.storage);
    this.watchers = new ScopeWatchers(ctx, this.store, settings);
    this.watchers.onLaggingClose = () => this.outbox.count("laggingCloses");
    this.watchers.onFramesSent = (n) => this.meter.add("frames", n);
    this.startUp(() => this.store.open());
  }

  /** Acquires queued in this instance (what a subclass may report; not an entry point). */
  protected queuedCount(): number {
    return this.state?.waiters.length ?? 0;
  }

  capability(scope: ScopeId): Promise<WireResponse> {
    return this.simple(scope, { kind: "capability" });
  }

  snapshot(scope: ScopeId): Promise<WireResponse> {
    return this.simple(scope, { kind: "snapshot" });
  }

  /** Try (waitMs 0) or wait up to `waitMs` for the lease. Resolves with 201 or 409. */
  async acquire(scope: ScopeId, request: WriteLeaseAcquire): Promise<WireResponse> {
    if (this.cancelled.has(request.waiterId)) return leaseHeldResponse("wait cancelled");
    const current = this.state ?? this.store.load(scope);
    if (this.waiters.has(request.waiterId) || current.holder?.waiterId === request.waiterId) {
      return scopeResultToResponse({
        ok: false,
        refusal: { code: "invalid_request", message: "waiterId is already in use", details: { field: "waiterId" } },
      });
    }
    if (request.waitMs > 0 && current.waiters.length >= this.settings.maxWaiters) {
      return scopeResultToResponse({
        ok: false,
        refusal: { code: "rate_limited", message: "too many waiters on this scope", details: { retryAfterMs: 1000 } },
      });
    }
    const { step, armed } = this.decide(scope, {
      kind: "acquire",
      participantId: request.participantId,
      ttlMs: request.ttlMs,
      waitMs: request.waitMs,
      leaseId: crypto.randomUUID(),
      waiterId: request.waiterId,
    });
    if (step.result.ok && step.result.kind === "queued") {
      // Registered synchronously with the decision, before anything can grant it.
      const answer = this.waiters.wait(request.waiterId);
      await armed;
      return answer;
    }
    await armed;
    return scopeResultToResponse(step.result);
  }

  /**
   * The caller of a waiting acquire went away: leave the queue, or give back a grant it can
   * no longer receive. Idempotent; always 204.
   */
  async cancelWait(scope: ScopeId, waiterId: string): Promise<WireResponse> {
    await this.cancelWaitNow(scope, waiterId);
    return { status: 204, body: null };
  }

  keepalive(scope: ScopeId, leaseId: string, ttlMs: number | undefined): Promise<WireResponse> {
    return this.simple(scope, { kind: "keepalive", leaseId, ttlMs });
  }

  refresh(scope: ScopeId, leaseId: string): Promise<WireResponse> {
    return this.simple(scope, { kind: "refresh", leaseId });
  }

  publish(scope: ScopeId, leaseId: string, body: PublishBody): Promise<WireResponse> {
    return this.simple(scope, {
      kind: "publish",
      leaseId,
      generation: body.generation,
      expectedGeneration: body.expectedGeneration,
      root: Object.hasOwn(body, "root") ? { value: body.root } : undefined,
      keyPrefixChanged: body.keyPrefixChanged,
    });
  }

  /** An operator ends the current lease (docs/protocol.md#eviction); 200 with the snapshot. */
  evict(scope: ScopeId, note: string | undefined): Promise<WireResponse> {
    return this.simple(scope, { kind: "evict", note });
  }

  /**
   * Always 204: releasing an unknown, expired or already released lease is a no-op. An id
   * that is not the current lease may be a client-chosen `waiterId`: the wait is cancelled
   * (or its undelivered grant given back), and an acquire arriving later with it is refused.
   */
  async release(scope: ScopeId, id: string): Promise<WireResponse> {
    const { step, armed } = this.decide(scope, { kind: "release", leaseId: id });
    const notHeld = step.result.ok && step.result.kind === "released" && !step.result.released;
    await Promise.all([armed, notHeld ? this.cancelWaitNow(scope, id) : undefined]);
    return { status: 204, body: null };
  }

  /** WebSocket upgrade for watch (the router authenticated, validated and refused keyed scopes). */
  override fetch(request: Request): Promise<Response> {
    return this.upgrade(
      request,
      watchParams(new URL(request.url)),
      "scope",
      async ({ scope, afterGeneration }, server) => {
        // Tick first (its events reach existing watchers), then register + ready + replay:
        // all synchronous, so nothing can slip between them.
        const { step, armed } = this.decide(scope, { kind: "expire" });
        this.watchers.register(server, step.next, afterGeneration);
        await armed;
      },
    );
  }

  /** Lease expiry and waiter deadlines with nobody touching the scope. Idempotent. */
  override async alarm(): Promise<void> {
    this.alarms.fired();
    const scope = this.state?.scope ?? this.store.storedScope();
    if (scope === undefined) return;
    // Early, late or repeated runs all end here: re-arm for what the state says now; a
    // listing entry a failed or lost delivery left behind goes too (the alarm is its retry).
    await Promise.all([this.decide(scope, { kind: "expire" }).armed, this.outbox.flush()]);
  }

  /** Stage the scope's summary for the namespace index, inside the save's transaction. */
  private readonly stage = (next: ScopeState): void => {
    const { scope, holder } = next;
    this.outbox.stage({
      kind: "scope",
      key: scopeListKey(scope),
      record: {
        volumeId: scope.volumeId,
        objectStoreId: scope.objectStoreId,
        key: scope.key,
        generation: formatCounter(next.generation),
        held: holder !== null,
        holder: holder?.participantId ?? "",
        wantLock: next.waiters.length > 0,
        leaseExpiresAtMs: holder?.expiresAtMs ?? 0,
      },
    });
  };

  /** Count what a command did for the namespace's counters (docs/operations.md). */
  private count(command: ScopeCommand, step: ScopeStep): void {
    const result = step.result;
    const granted = command.kind === "acquire" && result.ok && result.kind === "granted" ? 1 : 0;
    this.outbox.count("acquires", granted + step.granted.length);
    if (!result.ok && result.refusal.code !== "invalid_request") this.outbox.count(`conflict:${result.refusal.code}`);
    this.outbox.count("expiries", step.events.filter((e) => e.expired === true).length);
  }

  /**
   * Leave the queue (or give back an undelivered grant), answer the waiter, remember the id.
   * Returns the alarm write to await.
   */
  private cancelWaitNow(scope: ScopeId, waiterId: string): Promise<void> {
    const { armed } = this.decide(scope, { kind: "cancelWait", waiterId });
    this.waiters.settle(waiterId, leaseHeldResponse("wait cancelled"));
    // A cancel can overtake its own acquire (the client gave up at once): refuse it on arrival.
    this.cancelled.delete(waiterId);
    this.cancelled.add(waiterId);
    if (this.cancelled.size > CANCELLED_REMEMBERED) {
      const oldest = this.cancelled.values().next();
      if (oldest.done !== true) this.cancelled.delete(oldest.value);
    }
    return armed;
  }

  /** Decide, then re-arm, for commands answered at once. */
  private async simple(scope: ScopeId, command: ScopeCommand): Promise<WireResponse> {
    const { step, armed } = this.decide(scope, command);
    await armed;
    return scopeResultToResponse(step.result);
  }

  /**
   * One command through the mutation template (durable/mutation.ts), synchronously: load,
   * decide, save, re-arm, publish, deliver; then answer the waiters the step granted or
   * timed out. The caller awaits `armed` afterwards.
   */
  private decide(scope: ScopeId, command: ScopeCommand): Decided {
    const current = this.state ?? this.store.load(scope);
    if (this.state === undefined) this.state = current;
    const { step, settled } = this.mutate({
      decide: () => decideScope(current, command, this.clock.nowMs()),
      commit: (step) => {
        this.store.save(current, step, this.stage);
        // Queued waiters live in memory only, yet the listing shows them (`wantLock`): a step
        // that changed nothing durable stages the summary on its own when what is listed moved.
        if (!step.changed) this.stage(step.next);
      },
      afterCommit: (step) => {
        this.state = step.next;
        this.count(command, step);
      },
      // Always: the queue lives in memory, so a step that changed nothing durable may still
      // have moved a waiter's deadline or told the watchers someone wants the lock.
      deadlineMs: (step) => nextDeadlineMs(step.next),
      publish: (step) => this.watchers.publish(step.events),
    });
    const armed = [settled];
    const orphans: string[] = [];
    for (const { waiterId, lease } of step.granted) {
      if (!this.waiters.settle(waiterId, scopeResultToResponse({ ok: true, kind: "granted", lease })))
        orphans.push(waiterId);
    }
    for (const waiterId of step.timedOut)
      this.waiters.settle(
        waiterId,
        leaseHeldResponse("write lease is held (waitMs passed)", leaseHeldDetails(step.next)),
      );
    // A grant nobody is waiting for any more (cannot happen while requests and queue live
    // and die together, but never strand the scope on it): give it back at once.
    for (const waiterId of orphans) armed.push(this.decide(scope, { kind: "cancelWait", waiterId }).armed);
    return { step, armed: Promise.all(armed).then(() => undefined) };
  }
}

meterMethods(ScopeObject.prototype, [
  "capability",
  "snapshot",
  "acquire",
  "cancelWait",
  "keepalive",
  "refresh",
  "publish",
  "release",
  "evict",
  "fetch",
  "alarm",
  "webSocketMessage",
]);

/** The watch parameters, or undefined when the router sent a malformed upgrade URL. */
function watchParams(url: URL): { scope: ScopeId; afterGeneration: bigint | undefined } | undefined {
  const scope = parseScope(url.searchParams.get(SCOPE_WATCH_PARAMS.scope));
  const after = url.searchParams.get(SCOPE_WATCH_PARAMS.afterGeneration);
  const afterGeneration = after === null ? undefined : parseCounter(after);
  if (scope === undefined || isKeyedScope(scope) || (after !== null && afterGeneration === undefined)) return undefined;
  return { scope, afterGeneration };
}

function parseScope(text: string | null): ScopeId | undefined {
  if (text === null) return undefined;
  try {
    const value = JSON.parse(text) as Partial<ScopeId>;
    if (
      typeof value.volumeId !== "string" ||
      typeof value.objectStoreId !== "string" ||
      typeof value.key !== "string"
    ) {
      return undefined;
    }
    return { volumeId: value.volumeId, objectStoreId: value.objectStoreId, key: value.key };
  } catch {
    return undefined;
  }
}
