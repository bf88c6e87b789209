/**
 * The Durable Object of one generation, named `objectName(ns, "generation", id)`.
 *
 * Guarantees:
 * - Every command is load → decide (pure, machine.ts) → save inside one synchronous storage
 *   transaction, so concurrent registrations of one id have exactly one winner and a patch
 *   is never lost or applied on a stale record.
 * - `get` never creates anything (not even tables).
 * - Methods return plain `GenerationWireResponse` data over RPC; refusals are values, not exceptions.
 *
 * Does not: arm alarms or serve watches (generations have neither), or authenticate (the
 * router did, before the object was addressed).
 */
import { DurableObject } from "cloudflare:workers";
import type { GenerationWireResponse } from "../core/generation-machine.ts";
import { systemClock } from "../core/clock.ts";
import type { Clock } from "../core/clock.ts";
import type { GenerationRecord, PatchGenerationBody, RegisterGenerationBody } from "../protocol/generations.ts";
import { decidePatch, decideRegister, generationDecisionToResponse } from "../core/generation-machine.ts";
import type { GenerationDecision } from "../core/generation-machine.ts";
import { GenerationStore } from "./store.ts";

export class GenerationObject extends DurableObject<Env> {
  private readonly store: GenerationStore;
  /** The object's clock: the authority for `startedAtMs` / `updatedAtMs`. */
  protected clock: Clock = systemClock;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.store = new GenerationStore(ctx.storage.sql);
  }

  /** Register `body.id` (see `decideRegister`). */
  register(body: RegisterGenerationBody): GenerationWireResponse {
    return this.mutate(body.id, (existing, nowMs) => decideRegister(existing, body, nowMs));
  }

  /** Move generation `id` to another state (see `decidePatch`). */
  patch(id: string, body: PatchGenerationBody): GenerationWireResponse {
    return this.mutate(id, (existing, nowMs) => decidePatch(existing, body, nowMs));
  }

  /** The current record, or 404 `generation_not_found`. */
  get(id: string): GenerationWireResponse {
    const record = this.loadFor(id);
    if (record === undefined) {
      return generationDecisionToResponse({
        ok: false,
        refusal: { code: "generation_not_found", message: "generation not found", details: {} },
      });
    }
    return generationDecisionToResponse({ ok: true, record, changed: false, created: false });
  }

  private mutate(
    id: string,
    decide: (existing: GenerationRecord | undefined, nowMs: number) => GenerationDecision,
  ): GenerationWireResponse {
    return this.ctx.storage.transactionSync(() => {
      const decision = decide(this.loadFor(id), this.clock.nowMs());
      if (decision.ok && decision.changed) this.store.save(decision.record);
      return generationDecisionToResponse(decision);
    });
  }

  /** Load the record, checking it belongs to `id` (the object name makes this an invariant). */
  private loadFor(id: string): GenerationRecord | undefined {
    const record = this.store.load();
    if (record !== undefined && record.id !== id) {
      throw new Error("generation object addressed with an id it does not hold");
    }
    return record;
  }
}
