/**
 * Holding one claim as a generation for `shiftlock claims run` (etcd's `Mutex` shape, without
 * a generation session): acquire it — waiting, if asked, by watching the claim over the
 * WebSocket — then keep it renewed with the client's one lease rule until it is released
 * or lost.
 *
 * Guarantees:
 * - Exclusive even against the same generation: acquire sends `allowEmptyOnly`, so a second
 *   `claims run` with the same `--generation` waits instead of sharing the claim (and a
 *   crashed run's claim is only taken again once it expired).
 * - Waiting does not poll. After `claim_held` the next attempt is made only when the watch
 *   shows the claim free (absent, or phase `unowned`: released or expired). The watch
 *   buffers what arrives while an attempt is in flight, so a release is never missed; a
 *   watch that reconnects resumes without a gap (client/claims/claim-watch.ts).
 * - Transient failures of one attempt are retried with the same operation id until the
 *   wait ends, so a lost response cannot leave the claim held by us unknowingly.
 * - Renewal, loss and release are the handoff runtime's: the {@link Lease} handle, the
 *   renew loop of src/client/lease-timing.ts (every ttl/3; lost on refusal or when no renew
 *   succeeded before the deadline minus the margin), release retried until the deadline.
 *
 * Does not: register the generation (claims never check registration), fall back to polling
 * when the watch cannot connect (the wait fails with the watch's error), or stop anything
 * when the lease is lost (the caller watches `lease.signal`).
 */
import { sleepLinked, systemClock, type Clock } from "../core/clock.ts";
import type { ClaimRecord } from "../protocol/claims.ts";
import { ShiftlockError, hasCode } from "../protocol/errors.ts";
import type { ClaimsBackend, ClaimWatchItem } from "../client/claims/claims-backend.ts";
import { REFUSED } from "../client/handoff/session-claim.ts";
import { operationId } from "../client/handoff/ids.ts";
import { Lease, type LeaseControl } from "../client/handoff/lease.ts";
import { anySignal, retrying } from "../client/transport/retry-policy.ts";
import { LeaseDeadline, defaultRenewIntervalMs, defaultSafetyMarginMs, keepAlive } from "../client/lease-timing.ts";

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
  const { record, sentAtMs } = await acquireWhenFree(o, clock, opId);
  return startLease(o, clock, record.fencingToken, sentAtMs, opId);
}

interface Acquired {
  record: ClaimRecord;
  sentAtMs: number;
}

async function acquireWhenFree(o: HoldClaimOptions, clock: Clock, opId: (op: string) => string): Promise<Acquired> {
  const untilMs = clock.nowMs() + o.waitMs;
  const attempt = async (signal: AbortSignal): Promise<Acquired> => {
    const sentAtMs = clock.nowMs();
    const req = {
      claimName: o.claimName,
      generationId: o.generationId,
      ttlMs: o.ttlMs,
      allowEmptyOnly: true,
      operationId: opId("run-acquire"),
    };
    const record = await retrying({ clock, untilMs, signal }, () => o.backend.acquireClaim(req, { signal }));
    return { record, sentAtMs };
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

/** The lease of a fresh acquire: renewed from now on, released through `lease.release()`. */
function startLease(
  o: HoldClaimOptions,
  clock: Clock,
  token: bigint,
  sentAtMs: number,
  opId: (op: string) => string,
): Lease {
  const marginMs = defaultSafetyMarginMs(o.ttlMs);
  const intervalMs = defaultRenewIntervalMs(o.ttlMs);
  const renewStop = new AbortController();
  let control!: LeaseControl;
  const release = async (): Promise<void> => {
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
  };
  const lease: Lease = new Lease(
    {
      namespace: o.backend.namespace,
      claimName: o.claimName,
      generationId: o.generationId,
      token,
      // The server's expiry is its receive time + ttl, which is after our send time + ttl.
      deadline: new LeaseDeadline(marginMs, sentAtMs + o.ttlMs),
      release,
    },
    (c) => (control = c),
  );
  const lose = (error: Error): void => {
    renewStop.abort();
    if (control.end("lost", error)) o.onLost?.(error);
  };
  keepAlive({
    clock,
    deadline: control.deadline,
    intervalMs,
    firstAtMs: sentAtMs + intervalMs,
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
