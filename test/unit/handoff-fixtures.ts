// Shared fixtures of the handoff runtime tests: a ManualClock-driven MemoryClaimsBackend
// whose lease channel link can be cut or held (LinkedMemory), sessions configured like the
// Go reference's `newTestCoord`, and fault injection.
import { MemoryClaimsBackend } from "../../src/client/claims/memory-claims-backend.ts";
import type {
  BatchOp,
  BatchOutcome,
  CallOptions,
  ClaimRecord,
  ClaimsBackend,
} from "../../src/client/claims/claims-backend.ts";
import { GenerationSession } from "../../src/client/handoff/index.ts";
import type { GenerationSessionConfig, RuntimeEvent } from "../../src/client/handoff/index.ts";
import { ManualClock, flushMicrotasks } from "../../src/core/clock.ts";
import { ShiftlockError } from "../../src/protocol/errors.ts";
import type { WebSocketLike } from "../../src/client/transport/websocket.ts";

type Listener = (event: never) => void;

/** A socket whose handshake never completes (a connection attempt through a cut link). */
class HangingSocket implements WebSocketLike {
  readyState = 0;
  private readonly closeListeners: Listener[] = [];
  addEventListener(type: string, listener: Listener): void {
    if (type === "close") this.closeListeners.push(listener);
  }
  send(): void {
    throw new Error("not open");
  }
  close(code = 1000, reason = ""): void {
    if (this.readyState === 3) return;
    this.readyState = 3;
    queueMicrotask(() => {
      for (const l of this.closeListeners) (l as (e: unknown) => void)({ code, reason });
    });
  }
}

/**
 * The in-memory backend with a network between its lease channels and the client:
 * `link` "up" (frames flow), "cut" (pings and server frames are lost, new connections never
 * open) or "held" (pings arrive, server frames wait for {@link release}: late pongs).
 * `pings` counts the pings that reached the service.
 */
export class LinkedMemory extends MemoryClaimsBackend {
  link: "up" | "cut" | "held" = "up";
  pings = 0;
  private held: { socket: WebSocketLike; deliver: () => void }[] = [];

  /** Deliver every held frame, in order, to the sockets still open (a closed one hears nothing); how many were. */
  release(): number {
    const held = this.held.filter(({ socket }) => socket.readyState === 1);
    this.held = [];
    for (const { deliver } of held) deliver();
    return held.length;
  }

  protected override connectLeaseSocket(generationId: string, ttlMs: number): WebSocketLike {
    if (this.link === "cut") return new HangingSocket();
    const inner = super.connectLeaseSocket(generationId, ttlMs);
    const send = (data: string): void => {
      if (this.link === "cut") return;
      this.pings++;
      inner.send(data);
    };
    const addEventListener = (type: string, listener: Listener): void => {
      const call = (event: unknown): void => (listener as (e: unknown) => void)(event);
      if (type !== "message") return inner.addEventListener(type as "open", call as () => void);
      inner.addEventListener("message", (event) => {
        if (this.link === "cut") return;
        if (this.link === "held") this.held.push({ socket: inner, deliver: () => call(event) });
        else call(event);
      });
    };
    return {
      get readyState() {
        return inner.readyState;
      },
      send,
      close: (code, reason) => inner.close(code, reason),
      addEventListener,
    };
  }
}

type Method = {
  [K in keyof ClaimsBackend]-?: NonNullable<ClaimsBackend[K]> extends (...args: never[]) => unknown ? K : never;
}[keyof ClaimsBackend];

/** A fault hook: return a promise to replace the call, or undefined to pass it through. */
export type Fault = (args: unknown[], call: () => Promise<unknown>) => Promise<unknown> | undefined;

/** The single method each batch op stands for (its faults apply to the op inside a batch). */
const OP_METHOD = {
  acquire: "acquireClaim",
  renew: "renewClaim",
  prepare: "prepareTransfer",
  commit: "commitTransfer",
  abort: "abortTransfer",
  release: "releaseClaim",
} as const satisfies Record<BatchOp["op"], Method>;

/**
 * `inner` with per-method fault hooks (set/cleared at any time through `faults`). A hook on
 * a single method (say `commitTransfer`) also applies to that op inside a `batch`: the op's
 * outcome is what the hook's promise settles to (a rejection becomes the op's error, as the
 * server answers a refused op), and the other ops go to `inner.batch` in one call. So a
 * test written against the single-op path asserts the same of the batch path. A hook on
 * `batch` itself replaces the whole call (e.g. a lost response).
 */
export function faulty(inner: ClaimsBackend): { backend: ClaimsBackend; faults: Partial<Record<Method, Fault>> } {
  const faults: Partial<Record<Method, Fault>> = {};
  const opFaults = async (ops: readonly BatchOp[], opts: CallOptions | undefined): Promise<BatchOutcome[]> => {
    const outcomes: Promise<BatchOutcome>[] = [];
    const passed: number[] = [];
    ops.forEach((op, i) => {
      const { op: name, ...req } = op;
      const method = OP_METHOD[name];
      const single = (): Promise<unknown> => (inner[method] as (r: unknown) => Promise<unknown>).call(inner, req);
      const replaced = faults[method]?.([req], single);
      if (replaced === undefined) passed.push(i);
      else
        outcomes[i] = replaced.then(
          (claim) => ({ ok: true, claim: claim as ClaimRecord }),
          (error: unknown) => ({ ok: false, error: error as ShiftlockError }),
        );
    });
    if (passed.length > 0) {
      const answers = inner.batch(
        passed.map((i) => ops[i]!),
        opts,
      );
      passed.forEach((i, j) => {
        outcomes[i] = answers.then((a) => a[j]!);
      });
    }
    return Promise.all(outcomes);
  };
  const backend = new Proxy(inner, {
    get(target, prop, receiver) {
      const value: unknown = Reflect.get(target, prop, receiver);
      if (typeof value !== "function") return value;
      const fn = value as (...args: unknown[]) => unknown;
      return (...args: unknown[]) => {
        const call = (): Promise<unknown> => fn.apply(target, args) as Promise<unknown>;
        const hook = faults[prop as Method];
        if (hook !== undefined) return hook(args, call) ?? call();
        if (prop === "batch") return opFaults(args[0] as BatchOp[], args[1] as CallOptions | undefined);
        return call();
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
  memory: LinkedMemory;
  backend: ClaimsBackend;
  faults: Partial<Record<Method, Fault>>;
  open(id: string, extra?: Partial<GenerationSessionConfig>): Promise<GenerationSession>;
  /** Every event of every session opened through the rig. */
  events: RuntimeEvent[];
}

export function rig(): Rig {
  const clock = new ManualClock(1_000_000);
  const memory = new LinkedMemory({ clock });
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
