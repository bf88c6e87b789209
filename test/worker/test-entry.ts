/**
 * The Worker the worker tests run (vitest.config.ts, project `worker`): the service's own
 * entry (src/index.ts), except that the claim, scope and generation objects are subclasses
 * of the same names whose clock and limits a test moves while the object runs.
 *
 * Guarantees:
 * - The router, the bindings (wrangler.toml) and every rule are the service's; an object's
 *   `hooks` start as the production settings, so a test that touches none of them runs the
 *   production behaviour.
 * - `hooks` is the settings object the instance reads at each use: `hooks.clock = …`
 *   installs a manual clock (alarm tests control time without sleeping), `hooks.maxWatchers`,
 *   `maxUnacked`, `maxWaiters` lower a limit, `hooks.holdIndexDelivery` stages listing entries
 *   without delivering them (an instance that dies before delivering).
 *
 * Does not: survive the instance. A restart or an eviction constructs a fresh instance with
 * fresh `hooks`.
 */
import { ClaimObject as ServiceClaimObject } from "../../src/claims/claim-object.ts";
import type { IndexEntry } from "../../src/core/listing-entry.ts";
import type { ShiftlockObject } from "../../src/durable/object-base.ts";
import { NamespaceIndex as ServiceNamespaceIndex } from "../../src/listing/index-object.ts";
import { type ScopeSettings, ScopeObject as ServiceScopeObject, scopeSettings } from "../../src/coord/scope-object.ts";
import { GenerationObject as ServiceGenerationObject } from "../../src/generations/generation-object.ts";

export { default, IndexShard } from "../../src/index.ts";

/** Any of the test objects that feed the listing: their staged entry delivered on demand. */
export interface Flushable {
  flushIndex(): Promise<void>;
}

/** An object's settings, as a test may change them. */
export type TestHooks = { -readonly [K in keyof ScopeSettings]: ScopeSettings[K] };

/**
 * `Base` constructed with `hooks` as its settings (the runtime constructs every object with
 * `(ctx, env)`; the Durable Object classes take their settings as a third argument).
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- a mixin's constructor must take `any[]`
function withHooks<T extends abstract new (...args: any[]) => ShiftlockObject>(Base: T) {
  abstract class WithHooks extends Base {
    /** This instance's clock and limits (see the module comment). */
    readonly hooks: TestHooks;

    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- see above
    constructor(...args: any[]) {
      const [ctx, env] = args as [DurableObjectState, Env];
      const hooks: TestHooks = scopeSettings(env);
      super(ctx, env, hooks);
      this.hooks = hooks;
    }

    /** Deliver this object's pending listing entry now, without its coalescing window. */
    async flushIndex(): Promise<void> {
      await this.outbox.flush();
    }
  }
  return WithHooks;
}

export class ClaimObject extends withHooks(ServiceClaimObject) {}

export class ScopeObject extends withHooks(ServiceScopeObject) {
  /** Acquires queued in this instance. */
  override queuedCount(): number {
    return super.queuedCount();
  }
}

export class GenerationObject extends withHooks(ServiceGenerationObject) {}

export class NamespaceIndex extends ServiceNamespaceIndex {
  /** Put entries straight into the index, as a shard's batch of first versions would. */
  seed(entries: readonly IndexEntry[]): void {
    this.applyBatch({ entries: entries.map((value) => ({ seq: 1, value })), counters: {}, atMs: this.clock.nowMs() });
  }
}
