/**
 * The Durable Object of one generation, named `objectName(ns, "generation", id)`.
 *
 * Guarantees:
 * - Every command runs the mutation template (durable/mutation.ts): load → decide (pure,
 *   core/generation-machine.ts) → save in one storage transaction, all synchronous: no
 *   other call can run in between, so concurrent registrations of one id have exactly one
 *   winner and a patch is never lost or applied on a stale record.
 * - `get` never creates anything (not even tables).
 * - The store opens at start-up (durable/object-base.ts): an object whose schema is newer
 *   than this code refuses to start. Every failure is a `ShiftlockError` (`internal` for a
 *   broken invariant such as an object addressed under another id).
 * - Methods return plain `GenerationWireResponse` data over RPC; refusals are values, not exceptions.
 *
 * - Every change stages the record for the namespace's listing in the same transaction; the
 *   outbox arms the alarm shortly after, which delivers anything still undelivered. Start-up
 *   stages the stored record too, which writes only if the row shows something else
 *   (durable/object-base.ts).
 *
 * Does not: serve watches (generations have none), or authenticate (the router did, before
 * the object was addressed).
 */
import type { GenerationWireResponse } from "../core/generation-machine.ts";
import { ShiftlockError } from "../protocol/errors.ts";
import { ShiftlockObject } from "../durable/object-base.ts";
import { meterMethods } from "../durable/object-meter.ts";
import type { ObjectSettings } from "../durable/object-settings.ts";
import type { GenerationRecord, PatchGenerationBody, RegisterGenerationBody } from "../protocol/generations.ts";
import { decidePatch, decideRegister, generationDecisionToResponse } from "../core/generation-machine.ts";
import type { GenerationDecision } from "../core/generation-machine.ts";
import { GenerationStore } from "./store.ts";

export class GenerationObject extends ShiftlockObject {
  private readonly store: GenerationStore;

  constructor(ctx: DurableObjectState, env: Env, settings?: ObjectSettings) {
    super(ctx, env, settings);
    this.store = new GenerationStore(ctx.storage);
    this.startUp(
      () => this.store.open(),
      () => {
        const stored = this.store.load();
        if (stored !== undefined) this.stage(stored);
      },
    );
  }

  /** Register `body.id` (see `decideRegister`). */
  register(body: RegisterGenerationBody): Promise<GenerationWireResponse> {
    return this.command(body.id, (existing, nowMs) => decideRegister(existing, body, nowMs));
  }

  /** Move generation `id` to another state (see `decidePatch`). */
  patch(id: string, body: PatchGenerationBody): Promise<GenerationWireResponse> {
    return this.command(id, (existing, nowMs) => decidePatch(existing, body, nowMs));
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

  /**
   * One command through the mutation template (durable/mutation.ts). A generation has no
   * deadline and no watchers: a change is committed, then its listing delivery starts.
   */
  private async command(
    id: string,
    decide: (existing: GenerationRecord | undefined, nowMs: number) => GenerationDecision,
  ): Promise<GenerationWireResponse> {
    const { step: decision, settled } = this.mutate({
      decide: () => decide(this.loadFor(id), this.clock.nowMs()),
      commit: (d) => {
        if (d.ok && d.changed) this.store.save(d.record, this.stage);
      },
      follows: (d) => d.ok && d.changed,
      deadlineMs: () => undefined,
    });
    await settled;
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

meterMethods(GenerationObject.prototype, ["register", "patch", "get", "alarm"]);
