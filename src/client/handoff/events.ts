/**
 * Typed events of the handoff runtime and the listener registry that delivers them.
 *
 * Guarantees:
 * - Every generation state change, lease epoch start/keepalive/loss, claim
 *   acquire/renew/loss/release, drain step, transfer step and handoff outcome is emitted as
 *   one event, in the order the runtime observed it.
 * - Listeners never block or break the runtime: each is called synchronously in a
 *   `try/catch`; a listener that returns a promise is not awaited and its rejection is
 *   swallowed. `on()` returns an unsubscribe function.
 *
 * Does not: buffer events for late subscribers, or deliver events after the session closes
 * (the final `closed` event is the last one).
 */
import type { GenerationState } from "../../protocol/generations.ts";

/** Why a lease ended (also `signal.reason.details.reason`). */
export type LeaseEndReason = "released" | "lost" | "transferred" | "closed";

/** Event payloads by type. Every event also carries {@link RuntimeEventBase}. */
export interface RuntimeEventMap {
  "generation.state": { from: GenerationState; to: GenerationState; reason: string };
  /** The session holds a lease epoch (docs/protocol.md#sessions); its bound claims follow it. */
  "lease.started": { epoch: bigint; deadlineMs: number };
  /** A keepalive of the epoch was confirmed (`deadlineMs`: local clock, the server keeps it at least until then). */
  "lease.renewed": { epoch: bigint; deadlineMs: number; via: "channel" | "http" };
  /** The epoch is over for this session: every claim bound to it is lost with it. */
  "lease.lost": { epoch: bigint; error: Error };
  "claim.acquired": { claim: string; token: bigint; adopted: boolean };
  "claim.renewed": { claim: string; token: bigint; deadlineMs: number };
  "claim.lost": { claim: string; token: bigint; error: Error };
  "claim.released": { claim: string; token: bigint; reason: Exclude<LeaseEndReason, "lost"> };
  "drain.started": { successor: string; inFlight: number };
  "drain.completed": { successor: string };
  "drain.failed": { successor: string; error: Error };
  "transfer.prepared": { claim: string; token: bigint; successor: string };
  "transfer.committed": { claim: string; token: bigint; successor: string };
  "transfer.aborted": { claim: string; token: bigint; successor: string; reason: string };
  "handoff.started": { successor: string; claims: string[] };
  "handoff.completed": { successor: string; claims: string[] };
  "handoff.failed": { successor: string; error: Error };
  /** A failure the runtime handled by itself (transient renew error, generation PATCH refused, …). */
  error: { op: string; claim?: string; error: Error };
  closed: Record<string, never>;
}

export type RuntimeEventType = keyof RuntimeEventMap;

/** Fields on every event. */
export interface RuntimeEventBase<T extends RuntimeEventType = RuntimeEventType> {
  type: T;
  /** Local clock, epoch ms. */
  timeMs: number;
  generationId: string;
}

/** One event; without a type argument, the union of all (narrow it on `type`). */
export type RuntimeEvent<T extends RuntimeEventType = RuntimeEventType> = T extends RuntimeEventType
  ? RuntimeEventBase<T> & RuntimeEventMap[T]
  : never;

export type RuntimeListener<T extends RuntimeEventType> = (event: RuntimeEvent<T>) => unknown;

/** A small typed emitter; listener failures are isolated from the runtime. */
export class RuntimeEvents {
  private readonly listeners = new Map<RuntimeEventType | "*", Set<(event: RuntimeEvent) => unknown>>();

  constructor(
    private readonly generationId: string,
    private readonly nowMs: () => number,
  ) {}

  /** Subscribe to one event type; returns the unsubscribe function. */
  on<T extends RuntimeEventType>(type: T, listener: RuntimeListener<T>): () => void {
    return this.add(type, listener as (event: RuntimeEvent) => unknown);
  }

  /** Subscribe to every event. */
  onAny(listener: (event: RuntimeEvent) => unknown): () => void {
    return this.add("*", listener);
  }

  emit<T extends RuntimeEventType>(type: T, payload: RuntimeEventMap[T]): void {
    const event = { ...payload, type, timeMs: this.nowMs(), generationId: this.generationId } as RuntimeEvent;
    for (const key of [type, "*"] as const) {
      for (const listener of [...(this.listeners.get(key) ?? [])]) {
        try {
          const out = listener(event);
          if (out instanceof Promise) out.catch(() => undefined);
        } catch {
          // A broken listener must not break ownership bookkeeping.
        }
      }
    }
  }

  private add(key: RuntimeEventType | "*", listener: (event: RuntimeEvent) => unknown): () => void {
    let set = this.listeners.get(key);
    if (set === undefined) this.listeners.set(key, (set = new Set()));
    set.add(listener);
    return () => {
      set.delete(listener);
    };
  }
}
