/**
 * What a Durable Object runs with, fixed when it is constructed: its clock and its limits.
 *
 * Guarantees:
 * - Production objects get {@link objectSettings}: the server clock, the watcher cap from
 *   `MAX_WATCHERS_PER_OBJECT`, and the protocol's fixed limits (README "Configuration").
 * - Objects only read their settings, at each use, and never write them. Nothing an object
 *   exposes lets a caller change its clock or its limits.
 *
 * Does not: read settings anywhere but at construction. The worker tests construct their
 * objects through subclasses (test/worker/test-entry.ts) that pass settings of their own,
 * which they move while the object runs (a manual clock, a lower limit); production code
 * has no such door.
 */
import { type Clock, systemClock } from "../core/clock.ts";
import { WATCH_MAX_UNACKED_EVENTS } from "../protocol/watch.ts";
import { maxWatchersFrom } from "./websocket.ts";

/** The clock and the limits of one object. */
export interface ObjectSettings {
  /** Time source of every decision and deadline: the server clock (ADR 0002). */
  readonly clock: Clock;
  /** Watch subscribers one object accepts at once (`MAX_WATCHERS_PER_OBJECT`); 429 beyond. */
  readonly maxWatchers: number;
  /** Events a subscriber may leave unacknowledged before it is closed with 4008. */
  readonly maxUnacked: number;
  /**
   * Stage listing entries (and arm their safety alarm) but start no delivery. False in
   * production; true is what an instance that dies before delivering looks like.
   */
  readonly holdIndexDelivery: boolean;
}

/** The settings every production object runs with. */
export function objectSettings(env: Env): ObjectSettings {
  return {
    clock: systemClock,
    maxWatchers: maxWatchersFrom(env.MAX_WATCHERS_PER_OBJECT),
    maxUnacked: WATCH_MAX_UNACKED_EVENTS,
    holdIndexDelivery: false,
  };
}
