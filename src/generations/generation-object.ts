/**
 * The Durable Object of one generation, named `objectName(ns, "generation", id)`.
 *
 * Guarantees:
 * - Every command is load → decide (pure, core/generation-machine.ts) → save in one
 *   storage transaction, all synchronous: no other call can run in between, so concurrent
 *   registrations of one id have exactly one winner and a patch is never lost or applied
 *   on a stale record.
 * - `get` never creates anything (not even tables).
 * - The store opens at start-up (durable/object-base.ts): an object whose schema is newer
 *   than this code refuses to start. Every failure is a `ShiftlockError` (`internal` for a
 *   broken invariant such as an object addressed under another id).
 * - Methods return plain `GenerationWireResponse` data over RPC; refusals are values, not exceptions.
 *
 * - Every change stages the record for the namespace index in the same transaction and arms
 *   the alarm {@link DELIVERY_CHECK_MS} later, which delivers anything still undelivered.
 *
 * Does not: serve watches (generations have none), or authenticate (the router did, before
 * the object was addressed).
 */
import type { GenerationWireResponse } from "../core/generation-machine.ts";
import { ShiftlockError } from "../protocol/errors.ts";
import { ShiftlockObject } from "../durable/object-base.ts";
import type { GenerationRecord, PatchGenerationBody, RegisterGenerationBody } from "../protocol/generations.ts";
import { decidePatch, decideRegister, generationDecisionToResponse } from "../core/generation-machine.ts";
import type { GenerationDecision } from "../core/generation-machine.ts";
import { GenerationStore } from "./store.ts";

/** When the alarm checks that a generation's index entry left (docs/protocol.md#listing: lag ≤ 2 s). */
export const DELIVERY_CHECK_MS = 1_000;

export class GenerationObject extends ShiftlockObject {
  private readonly store: GenerationStore;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.store = new GenerationStore(ctx.storage);
    this.startUp(() => this.store.open());
  }

  /** Register `body.id` (see `decideRegister`). */
  register(body: RegisterGenerationBody): Promise<GenerationWireResponse> {
    return this.mutate(body.id, (existing, nowMs) => decideRegister(existing, body, nowMs));
  }

  /** Move generation `id` to another state (see `decidePatch`). */
  patch(id: string, body: PatchGenerationBody): Promise<GenerationWireResponse> {
    return this.mutate(id, (existing, nowMs) => decidePatch(existing, body, nowMs));
  }

  /** The index delivery's safety net: deliver what a crash or a failure left behind. */
  override async alarm(): Promise<void> {
    this.alarms.fired();
    await this.outbox.flush();
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

  private async mutate(
    id: string,
    decide: (existing: GenerationRecord | undefined, nowMs: number) => GenerationDecision,
  ): Promise<GenerationWireResponse> {
    // Synchronous from load to save: no other call can interleave (the object is single-threaded).
    const nowMs = this.clock.nowMs();
    const decision = decide(this.loadFor(id), nowMs);
    if (!decision.ok || !decision.changed) return generationDecisionToResponse(decision);
    this.store.save(decision.record, this.stage);
    // Delivery starts now, not awaited; the alarm is the safety net should this instance die
    // before it completes (generations change rarely, so one alarm write each is cheap).
    const armed = this.outbox.enabled ? this.alarms.ensure(nowMs + DELIVERY_CHECK_MS) : undefined;
    this.outbox.kick();
    await armed;
    return generationDecisionToResponse(decision);
  }

  /** Stage the record for the namespace index, inside the save's transaction. */
  private readonly stage = (record: GenerationRecord): void => {
    this.outbox.stage({ kind: "generation", key: record.id, record });
  };

  /** Load the record, checking it belongs to `id` (the object name makes this an invariant). */
  private loadFor(id: string): GenerationRecord | undefined {
    const record = this.store.load();
    if (record !== undefined && record.id !== id) {
      throw new ShiftlockError("internal", "generation object addressed with an id it does not hold");
    }
    return record;
  }
}
