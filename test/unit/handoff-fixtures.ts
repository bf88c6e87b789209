// Shared fixtures of the handoff runtime tests: a ManualClock-driven MemoryClaimsBackend,
// sessions configured like the Go reference's `newTestCoord`, and fault injection.
import { MemoryClaimsBackend } from "../../src/client/claims/memory-claims-backend.ts";
import type { ClaimsBackend } from "../../src/client/claims/claims-backend.ts";
import { GenerationSession } from "../../src/client/handoff/index.ts";
import type { GenerationSessionConfig, RuntimeEvent } from "../../src/client/handoff/index.ts";
import { ManualClock, flushMicrotasks } from "../../src/core/clock.ts";
import { ShiftlockError } from "../../src/protocol/errors.ts";

type Method = {
  [K in keyof ClaimsBackend]: ClaimsBackend[K] extends (...args: never[]) => unknown ? K : never;
}[keyof ClaimsBackend];

/** A fault hook: return a promise to replace the call, or undefined to pass it through. */
export type Fault = (args: unknown[], call: () => Promise<unknown>) => Promise<unknown> | undefined;

/** `inner` with per-method fault hooks (set/cleared at any time through `faults`). */
export function faulty(inner: ClaimsBackend): { backend: ClaimsBackend; faults: Partial<Record<Method, Fault>> } {
  const faults: Partial<Record<Method, Fault>> = {};
  const backend = new Proxy(inner, {
    get(target, prop, receiver) {
      const value: unknown = Reflect.get(target, prop, receiver);
      if (typeof value !== "function") return value;
      const fn = value as (...args: unknown[]) => unknown;
      return (...args: unknown[]) => {
        const call = (): Promise<unknown> => fn.apply(target, args) as Promise<unknown>;
        const hook = faults[prop as Method];
        return hook?.(args, call) ?? fn.apply(target, args);
      };
    },
  });
  return { backend, faults };
}

/** What a transport reports when no HTTP answer arrives. */
export function networkError(): ShiftlockError {
  return new ShiftlockError("internal", "network error: connection reset", { network: true });
}

export interface Rig {
  clock: ManualClock;
  memory: MemoryClaimsBackend;
  backend: ClaimsBackend;
  faults: Partial<Record<Method, Fault>>;
  open(id: string, extra?: Partial<GenerationSessionConfig>): Promise<GenerationSession>;
  /** Every event of every session opened through the rig. */
  events: RuntimeEvent[];
}

export function rig(): Rig {
  const clock = new ManualClock(1_000_000);
  const memory = new MemoryClaimsBackend({ clock });
  const { backend, faults } = faulty(memory);
  const events: RuntimeEvent[] = [];
  return {
    clock,
    memory,
    backend,
    faults,
    events,
    async open(id, extra = {}) {
      const session = await GenerationSession.open({
        service: "test",
        instanceId: id,
        generationId: id,
        backend,
        clock,
        leaseTtlMs: 1_000,
        renewIntervalMs: 200,
        acquireIntervalMs: 10,
        transferTimeoutMs: 1_000,
        drainTimeoutMs: 1_000,
        ...extra,
      });
      session.onAny((e) => events.push(e));
      return session;
    },
  };
}

/** Advance `clock` in `step` ms increments, letting renew loops run in between. */
export async function advanceBy(clock: ManualClock, totalMs: number, stepMs = 50): Promise<void> {
  for (let t = 0; t < totalMs; t += stepMs) {
    await clock.advance(Math.min(stepMs, totalMs - t));
    await flushMicrotasks(50);
  }
}

export { flushMicrotasks };
