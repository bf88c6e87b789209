/**
 * The Durable Object of one generation, named `objectName(ns, "generation", id)`: its record,
 * its lease (docs/protocol.md#sessions), the claims its epochs bind, and its lease channels.
 *
 * Guarantees:
 * - Every command runs the mutation template (durable/mutation.ts): load → decide (pure,
 *   core/generation-machine.ts) → save in one storage transaction, all synchronous: no
 *   other call can run in between, so concurrent registrations of one id have exactly one
 *   winner and a patch is never lost or applied on a stale record.
 * - `get` never creates anything (not even tables).
 * - The lease: this instance serves the deadline it last answered; the row holds the deadline
 *   last written and the ttls of the promises it does not hold (core/generation-lease.ts). A
 *   keepalive those ttls cover writes nothing. A fresh instance serves at least its first
 *   read's time + those ttls (never earlier than a deadline answered), or, for channels that
 *   survived, their last ping + ttl, and writes that once. Pings on the channel are answered
 *   by the runtime without waking this object; it reads their times when its alarm or a
 *   claim needs the deadline.
 * - One alarm (only moved earlier), for a live lease at its deadline, or the deployment's
 *   notice grace after it (`noticeAtMs`, `LEASE_NOTICE_TTLS`): it ends a lease nobody kept,
 *   re-arms for one that was kept, and retries what is owed (listing entries, lease ends).
 *   Anyone who asks sees the exact deadline.
 * - The end of an epoch (expiry, `lease/end`, retired, failed) is committed first, then told
 *   to the channels (which are closed) and delivered to every claim it bound
 *   (lease-deliveries.ts), repeated until each acknowledges.
 * - `bind` records a claim with the live epoch before the claim commits, so the end of that
 *   epoch always reaches it; a claim that asks after the end is told the lease is not live.
 * - Every change that the listing shows stages the record in the same transaction; start-up
 *   stages the stored record too, which writes only if the row shows something else
 *   (durable/object-base.ts).
 *
 * Does not: authenticate (the router did), or decide a claim's rules (the claim object does,
 * with the lease view answered here).
 */
import type { GenerationWireResponse } from "../core/generation-machine.ts";
import {
  decideEndLease,
  decideKeepalive,
  decidePatch,
  decideRegister,
  decideTouch,
  generationDecisionToResponse,
} from "../core/generation-machine.ts";
import type { GenerationDecision } from "../core/generation-machine.ts";
import {
  type LeasePromises,
  deadlineAfterRestart,
  endedThrough,
  leaseLive,
  leaseNoticeTtls,
  noticeAtMs,
  promiseAfter,
  sameButDeadline,
} from "../core/generation-lease.ts";
import type { LeaseView } from "../core/claim-leases.ts";
import { type OperationRecord, isRememberedStatus, replay, requestFingerprint } from "../core/claim-operations.ts";
import { ShiftlockError } from "../protocol/errors.ts";
import { DEFAULT_LEASE_CHANNEL_TTL_MS, generationToWire } from "../protocol/generations.ts";
import type {
  EndLeaseBody,
  GenerationRecord,
  KeepaliveBody,
  PatchGenerationBody,
  RegisterGenerationBody,
} from "../protocol/generations.ts";
import { WatchedObject } from "../durable/object-base.ts";
import { DELIVERY_CHECK_MS, DeliveryRetry } from "../durable/delivery-retry.ts";
import { meterMethods } from "../durable/object-meter.ts";
import type { ObjectSettings } from "../durable/object-settings.ts";
import { jsonResponse } from "../durable/websocket.ts";
import { LeaseChannels, leaseChannelParams } from "./lease-channel.ts";
import { LeaseEndDeliveries } from "./lease-deliveries.ts";
import { GenerationStore } from "./store.ts";

/** How a keepalive was answered: which promise ttl covers it (core/generation-lease.ts). */
type Answered = { via: "http" | "channel"; ttlMs: number };

/** What one command needs besides its decision. */
interface CommandOptions {
  /** The operation id and fingerprint of a replayable request. */
  operation?: { operationId: string; fingerprint: string };
  /** A keepalive: the deadline it answers must stay covered after a restart. */
  answered?: Answered;
}

type Loaded = { record: GenerationRecord; promises: LeasePromises };

const NO_PROMISES: LeasePromises = { httpTtlMs: 0, channelTtlMs: 0 };

export class GenerationObject extends WatchedObject {
  private readonly store: GenerationStore;
  protected override readonly watchers: LeaseChannels;
  /** Lease channels keep a lease: they are not watchers in the namespace's stats. */
  protected override readonly socketsAreWatchers = false;
  private readonly deliveries: LeaseEndDeliveries;
  /** The lease deadline this instance last answered (undefined until it first read the row). */
  private answered: { epoch: bigint; deadlineMs: number } | undefined;
  /** The deployment's notice grace in ttls (`LEASE_NOTICE_TTLS`, core/generation-lease.ts). */
  private readonly noticeTtls: number;

  constructor(ctx: DurableObjectState, env: Env, settings?: ObjectSettings) {
    super(ctx, env, settings);
    this.store = new GenerationStore(ctx.storage);
    this.noticeTtls = leaseNoticeTtls((env as { LEASE_NOTICE_TTLS?: string }).LEASE_NOTICE_TTLS);
    this.watchers = new LeaseChannels(ctx, null, this.settings);
    this.watchers.onFramesSent = (n) => this.meter.add("frames", n);
    const retry = new DeliveryRetry(this.alarms, () => this.clock.nowMs());
    this.deliveries = new LeaseEndDeliveries(ctx, env, () => this.namespace, this.store, retry, this.meter);
    this.startUp(
      () => this.store.open(),
      () => {
        const stored = this.store.load();
        if (stored !== undefined) this.stage(stored.record);
      },
    );
  }

  /** Register `body.id` (see `decideRegister`). */
  register(body: RegisterGenerationBody): Promise<GenerationWireResponse> {
    return this.command(body.id, (existing, nowMs) => decideRegister(existing, body, nowMs));
  }

  /** Move generation `id` to another state (see `decidePatch`); a final state ends the lease. */
  patch(id: string, body: PatchGenerationBody): Promise<GenerationWireResponse> {
    return this.command(id, (existing, nowMs) => decidePatch(existing, body, nowMs));
  }

  /** An HTTP keepalive (see `decideKeepalive`). */
  keepalive(id: string, body: KeepaliveBody): Promise<GenerationWireResponse> {
    return this.command(id, (existing, nowMs) => decideKeepalive(existing, body.ttlMs, nowMs), {
      ...this.operation("keepalive", body),
      answered: { via: "http", ttlMs: body.ttlMs },
    });
  }

  /** `lease/end` (see `decideEndLease`). */
  endLease(id: string, body: EndLeaseBody): Promise<GenerationWireResponse> {
    return this.command(id, (existing, nowMs) => decideEndLease(existing, nowMs), this.operation("lease/end", body));
  }

  /** The current record with its lease's lazy expiry applied, or 404 `generation_not_found`. */
  get(id: string): Promise<GenerationWireResponse> {
    return this.command(id, decideTouch);
  }

  /** A claim's question: the lease as it is now (a contending acquire, a bound prepare). */
  async leaseView(id: string): Promise<LeaseView> {
    await this.command(id, decideTouch);
    return this.view();
  }

  /**
   * A bound acquire or commit: record claim `claimName` with the live epoch (before the claim
   * commits, so that epoch's end reaches it), and answer the lease.
   */
  async bind(id: string, claimName: string): Promise<LeaseView> {
    await this.command(id, decideTouch);
    const view = this.view();
    if (view.live) this.store.bind(claimName, view.epoch);
    return view;
  }

  /** A bound claim was released or moved on: its epoch's end need not reach it. */
  unbind(_id: string, claimName: string, epoch: bigint): void {
    this.store.unbind(claimName, epoch);
  }

  /** The lease channel upgrade (the router has authenticated and validated). */
  override fetch(request: Request): Promise<Response> {
    const params = leaseChannelParams(new URL(request.url));
    if (params !== undefined) {
      // Refused before upgrading, and before anything is written (a 101 cannot carry a 404).
      const probe = decideKeepalive(this.load(params.id)?.record, params.ttlMs, this.clock.nowMs());
      if (!probe.ok) {
        const answer = generationDecisionToResponse(probe);
        return Promise.resolve(jsonResponse(answer.status, answer.body));
      }
    }
    return this.upgrade(request, params, "generation", async ({ id, ttlMs }, server) => {
      const answer = this.command(id, (existing, nowMs) => decideKeepalive(existing, ttlMs, nowMs), {
        answered: { via: "channel", ttlMs },
      });
      // The keepalive committed synchronously: the channel opens on the record it answered.
      const record = this.load()?.record;
      if (record !== undefined) this.watchers.open(server, record, ttlMs, this.clock.nowMs());
      await answer;
    });
  }

  override webSocketMessage(ws: WebSocket, message: string | ArrayBuffer): void {
    this.watchers.message(ws, message, this.clock.nowMs());
  }

  /**
   * A channel closed: its pings' times go with it, so the deadline they promised is written
   * to the row (one row), and once no channel is left no channel promise is unwritten.
   * Closing ends nothing: the lease runs to that deadline.
   */
  override webSocketClose(ws: WebSocket, code: number, reason: string, wasClean: boolean): void {
    const current = this.load(undefined, ws);
    if (current !== undefined && leaseLive(current.record, this.clock.nowMs())) {
      const record = {
        ...current.record,
        leaseExpiresAtMs: Math.max(current.record.leaseExpiresAtMs, this.watchers.channelDeadlineMs(ws)),
      };
      const othersOpen = this.ctx
        .getWebSockets(this.watchers.tag)
        .some((other) => other !== ws && other.readyState === WebSocket.OPEN);
      const promises = othersOpen ? current.promises : { ...current.promises, channelTtlMs: 0 };
      this.store.save(record, promises, undefined, this.stage);
      this.answered = { epoch: record.leaseEpoch, deadlineMs: record.leaseExpiresAtMs };
    }
    super.webSocketClose(ws, code, reason, wasClean);
  }

  /**
   * The alarm: deliver what the listing is owed, end a lease nobody kept (its channels' last
   * pings included), re-arm for one that was kept, and resume the lease ends still owed.
   */
  override async alarm(): Promise<void> {
    this.alarms.fired();
    await this.outbox.flush();
    const announced = this.answered;
    const current = this.load();
    if (current === undefined) return;
    await this.command(current.record.id, decideTouch);
    const after = this.load();
    if (after === undefined) return;
    const { record } = after;
    if (leaseLive(record, this.clock.nowMs())) {
      if (record.leaseExpiresAtMs !== announced?.deadlineMs) this.watchers.announce(record);
      await this.alarms.ensure(this.noticeAt(record.leaseExpiresAtMs, after.promises));
    }
    await this.deliveries.deliver(record.id, endedThrough(record, this.clock.nowMs()));
  }

  /**
   * One command through the mutation template (durable/mutation.ts): replayed by operation id,
   * else decided, committed (a keepalive its promise ttl covers commits nothing), the alarm
   * armed for the lease (`noticeAtMs`), the channels told of an end, and its deliveries started.
   */
  private async command(
    id: string,
    decide: (existing: GenerationRecord | undefined, nowMs: number) => GenerationDecision,
    options: CommandOptions = {},
  ): Promise<GenerationWireResponse> {
    const { operation } = options;
    if (operation !== undefined) {
      const prior = this.store.findOperation(operation.operationId);
      if (prior !== undefined) return replay(prior, operation.fingerprint) as GenerationWireResponse;
    }
    const before = this.load(id);
    const nowMs = this.clock.nowMs();
    const { step: decision, settled } = this.mutate({
      decide: () => decide(before?.record, nowMs),
      commit: (d) => this.commit(before, d, nowMs, options),
      follows: (d) => d.ok || d.leaseEnded !== undefined,
      // A live lease: its notice. An ended epoch: its deliveries start now; should this instance
      // die first, this alarm resumes them after the restart.
      deadlineMs: (d) =>
        d.leaseEnded !== undefined
          ? nowMs + DELIVERY_CHECK_MS
          : d.record !== undefined && d.record.leaseExpiresAtMs !== 0
            ? this.noticeAt(d.record.leaseExpiresAtMs, before?.promises ?? NO_PROMISES, options.answered?.ttlMs)
            : undefined,
      publish: (d) => {
        if (d.leaseEnded !== undefined) this.watchers.end(d.leaseEnded.epoch, d.leaseEnded.reason);
        else if (d.ok && before !== undefined && d.record.leaseExpiresAtMs > before.record.leaseExpiresAtMs) {
          if (options.answered?.via === "http") this.watchers.announce(d.record);
        }
      },
    });
    if (decision.leaseEnded !== undefined) {
      // After the commit, never awaited by the caller: the alarm retries what fails.
      const record = decision.record ?? before?.record;
      if (record !== undefined) void this.deliveries.deliver(id, endedThrough(record, nowMs));
    }
    await settled;
    return generationDecisionToResponse(decision);
  }

  /** The commit step: write what must survive, keep what this instance serves. */
  private commit(before: Loaded | undefined, d: GenerationDecision, nowMs: number, options: CommandOptions): void {
    const next = d.record;
    const response = generationDecisionToResponse(d);
    const operation: OperationRecord | undefined =
      options.operation !== undefined && isRememberedStatus(response.status)
        ? { ...options.operation, response, atMs: nowMs }
        : undefined;
    if (next === undefined) {
      if (operation !== undefined && before !== undefined) this.store.remember(operation);
      return;
    }
    // A lease that ended leaves no promise; a kept one, those of its keepalives and channels.
    const promises = next.leaseExpiresAtMs === 0 ? NO_PROMISES : { ...(before?.promises ?? NO_PROMISES) };
    const answered = options.answered;
    let raised = false;
    if (d.ok && answered !== undefined && next.leaseExpiresAtMs !== 0) {
      // An HTTP keepalive promises its deadline; a channel, every ping's time + its ttl.
      const key = answered.via === "http" ? "httpTtlMs" : "channelTtlMs";
      const raisedTo = promiseAfter(promises[key], answered.ttlMs);
      if (raisedTo !== undefined) {
        promises[key] = raisedTo;
        raised = true;
      }
    }
    const onlyDeadline =
      before !== undefined &&
      sameButDeadline(before.record, next) &&
      d.leaseEnded === undefined &&
      !(d.ok && d.created);
    if (!onlyDeadline || raised) this.store.save(next, promises, operation, this.stage);
    else if (operation !== undefined) this.store.remember(operation);
    this.answered = { epoch: next.leaseEpoch, deadlineMs: next.leaseExpiresAtMs };
  }

  /**
   * When the alarm next looks at a lease whose deadline is `deadlineMs` (`noticeAtMs`): the
   * deployment's grace is counted in the longest ttl the lease's promises, its open channels
   * and the keepalive being answered name, else the channel default.
   */
  private noticeAt(deadlineMs: number, promises: LeasePromises, answeredTtlMs = 0): number {
    const ttlMs =
      Math.max(promises.httpTtlMs, promises.channelTtlMs, answeredTtlMs, this.watchers.maxTtlMs()) ||
      DEFAULT_LEASE_CHANNEL_TTL_MS;
    return noticeAtMs(deadlineMs, ttlMs, this.noticeTtls);
  }

  /**
   * The record as this instance serves it: the stored row, its lease deadline the latest one
   * this instance answered (a keepalive its promise ttl covers writes nothing), or, the first
   * time an instance reads it, the restart rule's (core/generation-lease.ts), written once when
   * it folded promises; a live lease's deadline also moves to its channels' last ping + ttl.
   * `closing`: a channel being closed, whose last ping is evidence like an open one's.
   */
  private load(id?: string, closing?: WebSocket): Loaded | undefined {
    const stored = this.store.load();
    if (stored === undefined) return undefined;
    if (id !== undefined && stored.record.id !== id) {
      throw new ShiftlockError("internal", "generation object addressed with an id it does not hold");
    }
    let { record, promises } = stored;
    if (this.answered === undefined) {
      // A fresh instance after hibernation still has its channels (a restart drops them all):
      // their pings are exact; the channel promise's ttl is only for when none survived.
      const survived = this.watchers.anyOpen() || closing !== undefined;
      const channelsMs = Math.max(this.watchers.deadlineMs(), closing ? this.watchers.channelDeadlineMs(closing) : 0);
      const fold = deadlineAfterRestart({
        storedDeadlineMs: record.leaseExpiresAtMs,
        promises,
        liveChannelDeadlineMs: survived ? channelsMs : undefined,
        nowMs: this.clock.nowMs(),
      });
      if (fold.write !== undefined) {
        record = { ...record, leaseExpiresAtMs: fold.deadlineMs };
        promises = fold.write;
        this.store.save(record, promises, undefined, this.stage);
      }
      this.answered = { epoch: record.leaseEpoch, deadlineMs: fold.deadlineMs };
    }
    let leaseExpiresAtMs = record.leaseExpiresAtMs;
    if (leaseExpiresAtMs !== 0) {
      const answered = this.answered.epoch === record.leaseEpoch ? this.answered.deadlineMs : 0;
      leaseExpiresAtMs = Math.max(leaseExpiresAtMs, answered, this.watchers.deadlineMs());
    }
    return { record: { ...record, leaseExpiresAtMs }, promises };
  }

  /** The lease as a claim sees it, from what this instance serves now. */
  private view(): LeaseView {
    const record = this.load()?.record;
    if (record === undefined) return { epoch: 0n, expiresAtMs: 0, live: false };
    const live = leaseLive(record, this.clock.nowMs());
    return { epoch: record.leaseEpoch, expiresAtMs: live ? record.leaseExpiresAtMs : 0, live };
  }

  /** The replay key of a lease request that carries an operation id. */
  private operation(route: string, body: { operationId?: string | undefined }): CommandOptions {
    return body.operationId === undefined
      ? {}
      : { operation: { operationId: body.operationId, fingerprint: requestFingerprint(route, body) } };
  }

  /** Stage the record for the namespace index, inside the save's transaction. */
  private readonly stage = (record: GenerationRecord): void => {
    this.outbox.stage({ kind: "generation", key: record.id, record: generationToWire(record) });
  };
}

meterMethods(GenerationObject.prototype, [
  "register",
  "patch",
  "keepalive",
  "endLease",
  "get",
  "leaseView",
  "bind",
  "unbind",
  "fetch",
  "alarm",
  "webSocketMessage",
]);
