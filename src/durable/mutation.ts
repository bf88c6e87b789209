/**
 * The one mutation template of the Durable Objects that change state (claims, scopes,
 * generations): decide → commit → after commit → arm the alarm → publish → deliver to the
 * listing, in that order, in one synchronous stretch (docs/architecture.md "The mutation,
 * step by step"). Each object supplies its steps; the order and what follows from it live
 * here.
 *
 * Guarantees:
 * - Nothing awaits between the steps: {@link runMutation} returns before anything is
 *   awaited, so the object's input gate stays shut from the decision to the publish and no
 *   other call interleaves. Events leave in commit order.
 * - `decide` is the pure machine: it reads the loaded state and the object's clock and
 *   writes nothing.
 * - `commit` is the store's one storage transaction. If it throws, the transaction rolled
 *   back and no later step runs: nothing is counted, armed, published or delivered, and the
 *   error reaches the caller (the router answers `internal`). The outbox forgets what it
 *   staged inside it, so the next commit stages against the row as stored.
 * - Publish only after the commit returned: a watcher never hears of a change that is not
 *   durable.
 * - A step that does not `follow` (a refusal, a read that expired nothing) arms nothing,
 *   publishes nothing and starts no delivery. A refusal commits no state; all a store may
 *   write for it is the answer itself, for an operation-id replay (claims).
 * - The alarm is issued after the commit and before the publish, no later than the step's
 *   deadline — and, when the step staged a listing entry, no later than the delivery check
 *   (index-outbox.ts), so a listed change whose delivery a crash cut off leaves within the
 *   listing's bound whatever the deadline (a bound claim has none) — and only ever moved
 *   earlier (alarm-schedule.ts). The listing delivery starts
 *   after the publish and never sits on the mutation's path: only its safety alarm is
 *   awaited (index-outbox.ts). The caller awaits `settled`, both writes, after everything
 *   synchronous is done.
 *
 * Does not: decide a rule (the pure machines do), know a storage layout (the stores do), or
 * answer the caller (each object renders its own response).
 */
import type { AlarmSchedule } from "./alarm-schedule.ts";
import type { IndexOutbox } from "./index-outbox.ts";

/** What one object does at each step of one mutation. */
export interface MutationSteps<Step> {
  /** 1. Decide: the pure machine's step from the loaded state at the object's clock. */
  decide(): Step;
  /** 2. Commit: persist the step in one storage transaction (the listing row staged inside). */
  commit(step: Step): void;
  /** 3. After commit: what this instance keeps (cached state) and counts (counters). */
  afterCommit?(step: Step): void;
  /** Whether the alarm, the publish and the delivery follow. Default: they do. */
  follows?(step: Step): boolean;
  /** The committed state's earliest deadline (epoch ms), or undefined when nothing is due. */
  deadlineMs(step: Step): number | undefined;
  /** 4. Publish: the step's events to the watchers (objects without watchers have none). */
  publish?(step: Step): void;
  /**
   * 5. Deliver to the listing: `coalesced` (default) starts it after a short window and is
   * never awaited; `now` delivers at once and is awaited (an alarm handler, which is the
   * delivery's own retry).
   */
  delivery?: "coalesced" | "now";
}

/** A step run through the template, with the writes its caller awaits. */
export interface Mutated<Step> {
  step: Step;
  /** The alarm write and the delivery's (safety alarm, or the delivery itself when `now`). */
  settled: Promise<void>;
}

const SETTLED: Promise<void> = Promise.resolve();

/** The earlier of two optional instants. */
function earliest(a: number | undefined, b: number | undefined): number | undefined {
  if (a === undefined) return b;
  return b === undefined ? a : Math.min(a, b);
}

/** Run one mutation (see the module comment). Synchronous up to the returned promise. */
export function runMutation<Step>(
  alarms: AlarmSchedule,
  outbox: IndexOutbox,
  steps: MutationSteps<Step>,
): Mutated<Step> {
  const step = steps.decide();
  try {
    steps.commit(step);
  } catch (err) {
    outbox.rolledBack();
    throw err;
  }
  steps.afterCommit?.(step);
  if (steps.follows?.(step) === false) return { step, settled: SETTLED };
  // The earlier of the step's deadline and the check that its listing entry left (one write);
  // a delivery made now (the alarm's own) needs no check: a failure arms its retry.
  const checkAtMs = steps.delivery === "now" ? undefined : outbox.deliveryCheckAtMs();
  const armed = alarms.ensure(earliest(steps.deadlineMs(step), checkAtMs));
  steps.publish?.(step);
  const delivered = steps.delivery === "now" ? outbox.flush() : outbox.kick();
  return { step, settled: Promise.all([armed, delivered]).then(() => undefined) };
}
