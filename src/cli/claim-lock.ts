/**
 * Holding one claim as a generation for `shiftlock claims run` (etcd's `Mutex` shape, without
 * a generation session): acquire it — waiting, if asked, by watching the claim over the
 * WebSocket — then keep it until it is released or lost.
 *
 * Guarantees:
 * - Exclusive even against the same generation: acquire sends `allowEmptyOnly`, so a second
 *   `claims run` with the same `--generation` waits instead of sharing the claim (and a
 *   crashed run's claim is only taken again once it expired).
 * - Bound when the generation is registered (docs/protocol.md#sessions): this process keeps
 *   the generation's lease itself (lease-keeper.ts: the lease channel, one keepalive every
 *   ttl/3) and acquires with `bound: true`; the claim is lost with the lease's epoch — no
 *   keepalive confirmed before its deadline minus the margin, or the service ending it. A
 *   name that is not a registered generation (or a retired one, or a service without
 *   sessions) holds the claim with its own ttl, renewed every ttl/3 as before.
 * - Waiting does not poll. After `claim_held` the next attempt is made only when the watch
 *   shows the claim free (absent, or phase `unowned`: released or expired). The watch
 *   buffers what arrives while an attempt is in flight, so a release is never missed; a
 *   watch that reconnects resumes without a gap (client/claims/claim-watch.ts).
 * - Transient failures of one attempt are retried with the same operation id until the
 *   wait ends, so a lost response cannot leave the claim held by us unknowingly.
 * - Loss and release are the handoff runtime's: the {@link Lease} handle, the loss rule of
 *   src/client/lease-timing.ts, release retried until the deadline; releasing also stops
 *   the keepalives of a lease this process kept (the lease then runs to its deadline: other
 *   runs of the same generation may be bound to it).
 *
 * Does not: register the generation (claims never check registration), fall back to polling
 * when the watch cannot connect (the wait fails with the watch's error), or stop anything
 * when the lease is lost (the caller watches `lease.signal`).
 */
import { sleepLinked, systemClock, type Clock } from "../core/clock.ts";
import type { ClaimRecord } from "../protocol/claims.ts";
import { ShiftlockError, hasCode, type ErrorCode } from "../protocol/errors.ts";
import type { ClaimsBackend, ClaimWatchItem } from "../client/claims/claims-backend.ts";
import { REFUSED } from "../client/handoff/session-claim.ts";
import { operationId } from "../client/handoff/ids.ts";
import { Lease, type LeaseControl } from "../client/handoff/lease.ts";
import { anySignal, retrying } from "../client/transport/retry-policy.ts";
import { LeaseDeadline, defaultRenewIntervalMs, defaultSafetyMarginMs, keepAlive } from "../client/lease-timing.ts";
import type { LeaseTerm, SessionLease } from "../client/handoff/session-lease.ts";
import { leaseKeeper } from "./lease-keeper.ts";

export interface HoldClaimOptions {
  backend: ClaimsBackend;
  claimName: string;
  generationId: string;
  /** Lease duration asked for on acquire and every renew (100 ms … 24 h). */
  ttlMs: number;
  /** How long to wait for a held claim; 0 = one attempt (`claim_held` at once). */
  waitMs: number;
  /** Aborts the wait (the lease, once held, is ended by `release()` only). */
  signal: AbortSignal;
  clock?: Clock;
  /** Called each time the claim is found held, before waiting for the watch. */
  onWaiting?: (holder: ClaimRecord | undefined) => void;
  /** Called when the lease is lost (also visible as `lease.signal`). */
  onLost?: (error: Error) => void;
  /** Bind the claim under the generation's lease when it is registered (default true); false: its own ttl. */
  bind?: boolean;
}

/**
 * Acquire `claimName` for `generationId` and keep it renewed.
 * @example
 *   const lease = await holdClaim({ backend, claimName: "nightly", generationId: "cron-1", ttlMs: 15_000, waitMs: 0, signal });
 *   lease.signal.addEventListener("abort", stopTheWork);
 *   await lease.release();
 */
export async function holdClaim(o: HoldClaimOptions): Promise<Lease> {
  const clock = o.clock ?? systemClock;
  // Unique per process, so two runs of the same generation never share an operation id.
  const nonce = `${clock.nowMs()}-${Math.floor(Math.random() * 2 ** 32).toString(16)}`;
  let seq = 0;
  const opId = (op: string): string => operationId(o.generationId, `${op}-${nonce}`, o.claimName, ++seq);
  const keeper = o.bind === false ? undefined : await generationLease(o, clock);
  try {
    const { record, sentAtMs, term } = await acquireWhenFree(o, clock, opId, keeper);
    if (keeper === undefined || term === undefined) {
      // The server's expiry is its receive time + ttl, which is after our send time + ttl.
      const deadline = new LeaseDeadline(defaultSafetyMarginMs(o.ttlMs), sentAtMs + o.ttlMs);
      return startLease(o, clock, record.fencingToken, deadline, opId, undefined);
    }
    // Bound to another epoch than the one kept here: that one is over (a new epoch binds nothing).
    if (record.leaseEpoch !== term.epoch) {
      keeper.lostEpoch(term.epoch, new ShiftlockError("lease_lost", "the claim was bound to another lease epoch"));
    }
    return startLease(o, clock, record.fencingToken, term.deadline, opId, { keeper, term });
  } catch (err) {
    keeper?.close();
    throw err;
  }
}

/**
 * The generation's lease kept by this process, once its first epoch is confirmed; undefined
 * when the generation cannot hold one (not registered, retired or failed, or a service
 * without sessions): the claim then keeps a ttl of its own, as `claims run` always did.
 */
async function generationLease(o: HoldClaimOptions, clock: Clock): Promise<SessionLease | undefined> {
  const { lease } = leaseKeeper(o.backend, o.generationId, o.ttlMs, clock);
  try {
    await lease.live(o.signal);
    return lease;
  } catch (err) {
    lease.close();
    if (CANNOT_HOLD_A_LEASE.some((code) => hasCode(err, code))) return undefined;
    throw err;
  }
}

/** Answers that say this generation holds no lease here: the claim keeps a ttl of its own. */
const CANNOT_HOLD_A_LEASE: readonly ErrorCode[] = ["generation_not_found", "invalid_state", "not_found"];

interface Acquired {
  record: ClaimRecord;
  sentAtMs: number;
  /** The epoch the claim was bound under (bound acquires only). */
  term?: LeaseTerm;
}

async function acquireWhenFree(
  o: HoldClaimOptions,
  clock: Clock,
  opId: (op: string) => string,
  keeper: SessionLease | undefined,
): Promise<Acquired> {
  const untilMs = clock.nowMs() + o.waitMs;
  const attempt = async (signal: AbortSignal): Promise<Acquired> => {
    for (;;) {
      const term = await keeper?.live(signal);
      const sentAtMs = clock.nowMs();
      const req = {
        claimName: o.claimName,
        generationId: o.generationId,
        ...(term === undefined ? { ttlMs: o.ttlMs } : { bound: true }),
        allowEmptyOnly: true,
        operationId: opId("run-acquire"),
      };
      try {
        const record = await retrying({ clock, untilMs, signal }, () => o.backend.acquireClaim(req, { signal }));
        return term === undefined ? { record, sentAtMs } : { record, sentAtMs, term };
      } catch (err) {
        // The epoch ended under the acquire: try again under the next one.
        if (term === undefined || !hasCode(err, "no_lease")) throw err;
        keeper?.lostEpoch(term.epoch, err);
      }
    }
  };
  if (o.waitMs === 0) return attempt(o.signal);

  const stop = new AbortController(); // ends the watch and the wait timer
  const timedOut = new AbortController();
  sleepLinked(clock, o.waitMs, stop.signal).then(
    () => timedOut.abort(),
    () => undefined,
  );
  const waiting = anySignal(o.signal, timedOut.signal);
  const watch = o.backend.watchClaim(o.claimName, { signal: stop.signal });
  const items = watch[Symbol.asyncIterator]();
  let holder: ClaimRecord | undefined;
  try {
    for (;;) {
      try {
        return await attempt(waiting);
      } catch (err) {
        if (!timedOut.signal.aborted) o.signal.throwIfAborted();
        if (!timedOut.signal.aborted && !hasCode(err, "claim_held")) throw err;
        if (hasCode(err, "claim_held")) holder = heldBy(err);
      }
      if (timedOut.signal.aborted) throw stillHeld(o, holder);
      o.onWaiting?.(holder);
      const free = await nextFree(items, waiting);
      if (!free) {
        if (timedOut.signal.aborted) throw stillHeld(o, holder);
        o.signal.throwIfAborted();
        throw new ShiftlockError("internal", `the watch of claim ${JSON.stringify(o.claimName)} ended`);
      }
    }
  } finally {
    stop.abort();
    watch.close();
  }
}

/** Wait for a watch item that shows the claim free; false when the watch or the wait ended. */
async function nextFree(items: AsyncIterator<ClaimWatchItem>, signal: AbortSignal): Promise<boolean> {
  const aborted = new Promise<IteratorResult<ClaimWatchItem>>((resolve) => {
    if (signal.aborted) resolve({ done: true, value: undefined });
    signal.addEventListener("abort", () => resolve({ done: true, value: undefined }), { once: true });
  });
  for (;;) {
    const item = await Promise.race([items.next(), aborted]);
    if (item.done === true) return false;
    if (item.value.claim === null || item.value.claim.phase === "unowned") return true;
  }
}

function heldBy(err: unknown): ClaimRecord | undefined {
  const claim = err instanceof ShiftlockError ? err.details["claim"] : undefined;
  return typeof claim === "object" && claim !== null ? (claim as ClaimRecord) : undefined;
}

function stillHeld(o: HoldClaimOptions, holder: ClaimRecord | undefined): ShiftlockError {
  return new ShiftlockError(
    "claim_held",
    `claim ${JSON.stringify(o.claimName)} was still held after waiting ${o.waitMs} ms`,
    holder === undefined ? {} : { claim: holder },
  );
}

/**
 * The lease of a fresh acquire, released through `lease.release()`: bound (`bound` given), it
 * ends as lost with its epoch; otherwise it is renewed from now on.
 */
function startLease(
  o: HoldClaimOptions,
  clock: Clock,
  token: bigint,
  deadline: LeaseDeadline,
  opId: (op: string) => string,
  bound: { keeper: SessionLease; term: LeaseTerm } | undefined,
): Lease {
  const intervalMs = defaultRenewIntervalMs(o.ttlMs);
  const renewStop = new AbortController();
  let control!: LeaseControl;
  const release = async (): Promise<void> => {
    try {
      if (!lease.held) return;
      renewStop.abort();
      // End locally first: protected work stops before ownership is given up on the server.
      control.end("released");
      const req = { claimName: o.claimName, generationId: o.generationId, token, operationId: opId("run-release") };
      try {
        await retrying({ clock, untilMs: lease.deadlineMs }, () => o.backend.releaseClaim(req));
      } catch (err) {
        // Already not ours (expired, or a newer owner): nothing left to release.
        if (!REFUSED.some((code) => hasCode(err, code))) throw err;
      }
    } finally {
      bound?.keeper.close();
    }
  };
  const lease: Lease = new Lease(
    {
      namespace: o.backend.namespace,
      claimName: o.claimName,
      generationId: o.generationId,
      token,
      deadline,
      release,
    },
    (c) => (control = c),
  );
  const lose = (error: Error): void => {
    renewStop.abort();
    if (control.end("lost", error)) o.onLost?.(error);
  };
  if (bound !== undefined) {
    const { lost } = bound.term;
    const onLost = (): void => lose(lost.reason as Error);
    if (lost.aborted) onLost();
    else lost.addEventListener("abort", onLost, { once: true });
    renewStop.signal.addEventListener("abort", () => lost.removeEventListener("abort", onLost), { once: true });
    return lease;
  }
  keepAlive({
    clock,
    deadline: control.deadline,
    intervalMs,
    firstAtMs: deadline.deadlineMs - o.ttlMs + intervalMs,
    stop: renewStop.signal,
    ttlMs: () => o.ttlMs,
    send: (ttlMs, signal) =>
      o.backend.renewClaim({ claimName: o.claimName, generationId: o.generationId, token, ttlMs }, { signal }),
    isRefusal: (err) => REFUSED.some((code) => hasCode(err, code)),
    renewed: (record) =>
      record.ownerGeneration === o.generationId && record.fencingToken === token
        ? undefined
        : new ShiftlockError("not_owner", "renew returned another owner", { claim: record }),
    lost: (error) => lose(error),
    deadlineError: () =>
      new ShiftlockError("lease_lost", "no successful renew before the deadline", { claim: o.claimName }),
  }).catch((err: unknown) => lose(err instanceof Error ? err : new Error(String(err))));
  return lease;
}
