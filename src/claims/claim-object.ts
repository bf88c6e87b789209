/**
 * One Durable Object per claim (docs/protocol.md#claims): the single writer of that claim's record, fencing
 * token, history and operation records.
 *
 * Every mutation, read and alarm runs the mutation template (durable/mutation.ts): load →
 * decide (pure machine, `nowMs` from the clock) → save in ONE synchronous transaction
 * (record + events + operation record) → re-arm the alarm → publish events to watchers →
 * start the listing delivery. Nothing awaits between decide and publish, so events leave
 * in commit order.
 *
 * Guarantees:
 * - Operation ids: a retry with the same id and request returns the first response (same
 *   status and body) without touching state or publishing; the same id with a different
 *   route or body is `operation_id_conflict`. Only 2xx and 409 outcomes are remembered.
 * - Lazy expiry on every access (mutations, GET and watch), persisted with its `expired`
 *   event; reading a never-created claim answers `claim_not_found` and writes nothing.
 * - The RPC methods return plain {@link WireResponse} data; they throw only on bugs.
 * - Every commit that changes what the listing shows stages the record in the same
 *   transaction (a renewal stages nothing); delivery follows, never awaited by the mutation
 *   (durable/index-outbox.ts). Start-up stages the stored record too, which writes only if
 *   the row shows something else (durable/object-base.ts).
 * - Bound claims (docs/protocol.md#sessions): before deciding, the leases the command needs
 *   (core/claim-leases.ts) are asked of their generation objects — a bound acquire or commit
 *   binds the claim there first, so that epoch's end reaches it — and the decision is taken
 *   from the record as it is after that await. An epoch end delivered meanwhile is
 *   remembered by this instance, so a bind answered before it never leaves the claim bound
 *   to an ended epoch. A bound claim released, expired or moved on is unbound in the
 *   background (best effort: a stale binding costs one delivery that changes nothing).
 *
 * Does not: validate request shapes or authenticate (the router does, before calling).
 */
import { claimToWire } from "../protocol/claims.ts";
import type { ClaimRecord } from "../protocol/claims.ts";
import { claimRoutePath, type ClaimMutationName, type ClaimRequest } from "../protocol/claim-routes.ts";
import { parseCounter } from "../protocol/counter.ts";
import { ShiftlockError } from "../protocol/errors.ts";
import { decideClaim, nextDeadlineMs } from "../core/claim-machine.ts";
import {
  type LeaseView,
  type LeaseViews,
  type LeasesWanted,
  NO_LEASE_VIEWS,
  leasesWanted,
} from "../core/claim-leases.ts";
import { objectName } from "../durable/object-names.ts";
import type { ClaimStep } from "../core/claim-machine.ts";
import { commandOf } from "../core/claim-command.ts";
import { type OperationRecord, isRememberedStatus, replay, requestFingerprint } from "../core/claim-operations.ts";
import { claimResultToResponse } from "../core/claim-response.ts";
import type { WireResponse } from "../protocol/wire-response.ts";
import { WatchedObject } from "../durable/object-base.ts";
import type { Mutated } from "../durable/mutation.ts";
import { meterMethods } from "../durable/object-meter.ts";
import type { ObjectSettings } from "../durable/object-settings.ts";
import { ClaimStore } from "./store.ts";
import { ClaimWatchers } from "./watch.ts";

/** A claim step with its wire answer, rendered once: the answer and its operation record share it. */
type Answered = ClaimStep & { response: WireResponse };

function answered(step: ClaimStep): Answered {
  return { ...step, response: claimResultToResponse(step.result) };
}

/** Internal query parameters of the watch upgrade the router forwards. */
export const WATCH_PARAMS = { name: "name", afterVersion: "afterVersion" } as const;

/** The watch parameters, or undefined when the router sent a malformed upgrade URL. */
function watchParams(url: URL): { name: string; afterVersion: bigint | undefined } | undefined {
  const name = url.searchParams.get(WATCH_PARAMS.name) ?? "";
  const after = url.searchParams.get(WATCH_PARAMS.afterVersion);
  const afterVersion = after === null ? undefined : parseCounter(after);
  if (name === "" || (after !== null && afterVersion === undefined)) return undefined;
  return { name, afterVersion };
}

export class ClaimObject extends WatchedObject {
  private readonly store: ClaimStore;
  protected override readonly watchers: ClaimWatchers;
  /** The highest epoch per generation whose end this instance was told (see the module comment). */
  private readonly endedEpochs = new Map<string, bigint>();

  constructor(ctx: DurableObjectState, env: Env, settings?: ObjectSettings) {
    super(ctx, env, settings);
    this.store = new ClaimStore(ctx.storage);
    this.watchers = new ClaimWatchers(ctx, this.store, this.settings);
    this.watchers.onLaggingClose = () => this.outbox.count("laggingCloses");
    this.watchers.onFramesSent = (n) => this.meter.add("frames", n);
    this.startUp(
      () => this.store.open(),
      () => {
        const stored = this.store.load();
        if (stored !== undefined) this.stage(stored);
      },
    );
  }

  /** Apply one claim mutation. */
  async command(name: string, request: ClaimRequest): Promise<WireResponse> {
    const operationId = request.body.operationId;
    // Only a request with an operation id is ever compared with another: fingerprint only those.
    const fingerprint = operationId === undefined ? "" : requestFingerprint(claimRoutePath(request.op), request.body);
    if (operationId !== undefined) {
      const prior = this.store.findOperation(operationId);
      // A replay answers from the record alone: no decision, no write, no event.
      if (prior !== undefined) return replay(prior, fingerprint);
    }
    const command = commandOf(request.op, request.body);
    let current = this.load(name);
    const wanted = leasesWanted(current, command, this.clock.nowMs());
    let views = NO_LEASE_VIEWS;
    if (wanted.bind !== undefined || wanted.peek !== undefined) {
      // The generations answer first; the decision is taken from the record as it is after that await.
      views = await this.leaseViews(name, wanted);
      current = this.load(name);
    }
    const decidedFrom = current;
    const nowMs = this.clock.nowMs();
    const { step, settled } = this.apply(
      decidedFrom,
      () => answered(decideClaim(name, decidedFrom, command, nowMs, views)),
      ({ response }) =>
        operationId !== undefined && isRememberedStatus(response.status)
          ? { operationId, fingerprint, response, atMs: nowMs }
          : undefined,
      (step) => this.count(request.op, step, step.response),
    );
    await settled;
    this.unbindIfMoved(name, decidedFrom, step.next);
    return step.response;
  }

  /**
   * An operator evicts the owner (docs/protocol.md#eviction): the same template as a
   * mutation, without operation ids (evicting twice changes nothing the second time).
   */
  async evict(name: string, note: string | undefined): Promise<WireResponse> {
    const current = this.load(name);
    const { step, settled } = this.apply(
      current,
      () => answered(decideClaim(name, current, { kind: "evict", note }, this.clock.nowMs())),
      () => undefined,
      (step) => this.countExpiries(step),
    );
    await settled;
    this.unbindIfMoved(name, current, step.next);
    return step.response;
  }

  /**
   * The generation's delivery: epoch `epoch` of `generationId` ended. A claim bound to it (or
   * an earlier epoch) of that generation expires, watchers hear `expired`; anything else is
   * unchanged. Answering is the acknowledgement.
   */
  async leaseEnded(name: string, generationId: string, epoch: bigint): Promise<void> {
    if ((this.endedEpochs.get(generationId) ?? -1n) < epoch) this.endedEpochs.set(generationId, epoch);
    const current = this.load(name);
    if (current === undefined) return;
    const { settled } = this.apply(
      current,
      () => decideClaim(name, current, { kind: "lease_ended", generationId, epoch }, this.clock.nowMs()),
      () => undefined,
      (step) => this.countExpiries(step),
    );
    await settled;
  }

  /**
   * A bound hold that ended or moved on (release, eviction, commit, an unbinding acquire): tell
   * its generation in the background, so that epoch's end need not reach this claim.
   */
  private unbindIfMoved(name: string, before: ClaimRecord | undefined, after: ClaimRecord | undefined): void {
    if (before === undefined || !before.bound || before.phase === "unowned") return;
    const same =
      after?.bound === true &&
      after.ownerGeneration === before.ownerGeneration &&
      after.leaseEpoch === before.leaseEpoch;
    if (same) return;
    const id = before.ownerGeneration;
    const namespace = this.namespace;
    if (namespace === undefined) return; // never another namespace's generation (the delivery then changes nothing)
    const stub = this.env.GENERATIONS.getByName(objectName(namespace, "generation", id));
    this.ctx.waitUntil(stub.unbind(id, name, before.leaseEpoch).catch(() => undefined));
  }

  /**
   * The leases a command needs (core/claim-leases.ts), asked of their generation objects. A
   * generation that answers after this instance heard its epoch end is not live.
   */
  private async leaseViews(name: string, wanted: LeasesWanted): Promise<LeaseViews> {
    const namespace = this.namespace;
    if (namespace === undefined) {
      // Only an instance started without a name, with the listing switched off, cannot know it.
      throw new ShiftlockError("internal", "claim object does not know its namespace");
    }
    const ask = async (id: string, bind: boolean): Promise<[string, LeaseView]> => {
      const stub = this.env.GENERATIONS.getByName(objectName(namespace, "generation", id));
      const view = bind ? await stub.bind(id, name) : await stub.leaseView(id);
      const ended = this.endedEpochs.get(id);
      return [id, ended !== undefined && ended >= view.epoch ? { ...view, live: false } : view];
    };
    const asked: Promise<[string, LeaseView]>[] = [];
    if (wanted.bind !== undefined) asked.push(ask(wanted.bind, true));
    if (wanted.peek !== undefined && wanted.peek !== wanted.bind) asked.push(ask(wanted.peek, false));
    return new Map(await Promise.all(asked));
  }

  /** Read the claim (applying expiry). `claim_not_found` when it was never created. */
  async get(name: string): Promise<WireResponse> {
    const { step, settled } = this.touch(name);
    await settled;
    return claimResultToResponse(step.result);
  }

  /** WebSocket upgrades for watch (the router has authenticated and validated). */
  override fetch(request: Request): Promise<Response> {
    return this.upgrade(request, watchParams(new URL(request.url)), "claim", async ({ name, afterVersion }, server) => {
      // Expiry first (published to existing watchers), then register + replay: all synchronous.
      const { step, settled } = this.touch(name);
      this.watchers.register(server, step.next, afterVersion);
      await settled;
    });
  }

  /**
   * Expiry at the deadline, with nobody touching the claim. An alarm is armed no later than
   * the record's deadline (1 ms after `expiresAtMs`: expiry is strict) whenever it can
   * expire, and only ever moved earlier, so a renewal or a release leaves an alarm that
   * fires early or for nothing. Correctness never depends on it (every access applies expiry
   * too): early, late or repeated runs ask the machine to `expire`, which changes nothing
   * unless the deadline passed, and re-arm for what the record says now.
   */
  override async alarm(): Promise<void> {
    this.alarms.fired();
    const current = this.store.load();
    if (current === undefined) return;
    const { settled } = this.mutate({
      decide: () => decideClaim(current.name, current, { kind: "expire" }, this.clock.nowMs()),
      commit: (step) => {
        if (step.changed) this.store.commit(current, step, undefined, this.stage);
      },
      afterCommit: (step) => this.countExpiries(step),
      deadlineMs: (step) => nextDeadlineMs(step.next),
      publish: (step) => this.watchers.publish(step.events),
      // An entry a failed or lost delivery left behind goes now (the alarm is its retry).
      delivery: "now",
    });
    await settled;
  }

  /** Load, checking that the object is addressed under the claim's own name. */
  private load(name: string): ClaimRecord | undefined {
    const current = this.store.load();
    if (current !== undefined && current.name !== name) {
      throw new ShiftlockError("internal", "claim object addressed under a different name");
    }
    return current;
  }

  /** Load and apply lazy expiry (persisting and publishing it). Synchronous. */
  private touch(name: string): Mutated<ClaimStep> {
    const current = this.load(name);
    return this.apply(
      current,
      () => decideClaim(name, current, { kind: "get" }, this.clock.nowMs()),
      () => undefined,
      (step) => this.countExpiries(step),
    );
  }

  /**
   * One claim step through the mutation template (durable/mutation.ts): decided from the
   * record as loaded, committed with the record of its answer `operationOf` returns (if
   * any), counted, then, when the claim changed, armed, published and delivered. A refusal
   * changed nothing: its counters wait for the next delivery of an entry.
   */
  private apply<S extends ClaimStep>(
    current: ClaimRecord | undefined,
    decide: () => S,
    operationOf: (step: S) => OperationRecord | undefined,
    count: (step: S) => void,
  ): Mutated<S> {
    return this.mutate({
      decide,
      commit: (step) => this.store.commit(current, step, operationOf(step), this.stage),
      afterCommit: count,
      follows: (step) => step.changed,
      deadlineMs: (step) => nextDeadlineMs(step.next),
      publish: (step) => this.watchers.publish(step.events),
    });
  }

  /** Stage the record for the namespace index, inside the commit's transaction. */
  private readonly stage = (next: ClaimRecord): void => {
    this.outbox.stage({ kind: "claim", key: next.name, record: claimToWire(next) });
  };

  /** Count what a mutation did for the namespace's counters (docs/operations.md). */
  private count(op: ClaimMutationName, step: ClaimStep, response: WireResponse): void {
    this.countExpiries(step);
    if (response.status === 409) {
      const code = (response.body as { error?: { code?: string } }).error?.code ?? "conflict";
      this.outbox.count(`conflict:${code}`);
    }
    if (response.status !== 200 || !step.changed) return;
    if (op === "acquire") this.outbox.count("acquires");
    else if (op === "commit") this.outbox.count("transfersCommitted");
    else if (op === "abort") this.outbox.count("transfersAborted");
  }

  private countExpiries(step: ClaimStep): void {
    this.outbox.count("expiries", step.events.filter((e) => e.reason === "expired").length);
  }
}

meterMethods(ClaimObject.prototype, ["command", "evict", "get", "fetch", "alarm", "webSocketMessage", "leaseEnded"]);
