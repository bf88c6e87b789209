/**
 * The fence torture: owners take claims (the in-memory claims backend: the server's own
 * claim machine, real clock, short leases) and write through every fence with the claim's
 * fence key and token, while faults make some of them stale:
 * - **pause**: an owner stops for 1–3 lease lengths mid-run, then keeps writing with its
 *   old token (its lease expired; another owner may have taken the claim and written);
 * - **crash**: an owner leaves with a write in flight and never releases (the claim expires);
 * - **takeover**: an operator forces the claim to a new owner (prepare + commit a transfer
 *   with the current owner's token, as an operator would), writes once through every fence
 *   under the new token and releases — while the old owner keeps writing;
 * - **eviction**: an operator evicts the owner (the backend's `evictClaim`); the owner keeps
 *   writing with its evicted token while the next owner acquires and writes.
 * Every write is recorded (send and answer times, outcome) for check/fences.ts.
 *
 * Does not: use the shiftlock server (the in-memory backend runs the server's claim machine,
 * eviction included; the fences see only tokens), nor make the interleaving
 * reproducible (the seed fixes the choices, not the timing).
 */
import { performance } from "node:perf_hooks";
import { setTimeout as sleep } from "node:timers/promises";
import { MemoryClaimsBackend } from "../../../src/client/claims/memory-claims-backend.ts";
import { claimFenceKey } from "../../../src/client/fence/index.ts";
import type { FenceWrite } from "../check/fences.ts";
import { Rng } from "../rng.ts";
import { RESOURCES, openStores } from "./stores.ts";

export interface FenceTortureOptions {
  durationS: number;
  owners: number;
  seed: number;
  /** Claim lease length (default 300 ms). */
  ttlMs?: number;
  signal?: AbortSignal;
  log: (line: string) => void;
}

export interface FenceTortureResult {
  writes: FenceWrite[];
  pauses: number;
  crashes: number;
  takeovers: number;
  evictions: number;
}

const NAMESPACE = "torture";
const CLAIMS = Array.from({ length: 8 }, (_, i) => `ledger-${i}`);
const OBJECTS = ["x", "y"];

export async function runFenceTorture(opts: FenceTortureOptions): Promise<FenceTortureResult> {
  const ttlMs = opts.ttlMs ?? 300;
  const rng = new Rng(opts.seed);
  const backend = new MemoryClaimsBackend({ namespace: NAMESPACE });
  const stores = await openStores();
  const result: FenceTortureResult = { writes: [], pauses: 0, crashes: 0, takeovers: 0, evictions: 0 };
  const inFlight = new Set<Promise<void>>();
  const endAt = performance.now() + opts.durationS * 1_000;
  const running = (): boolean => performance.now() < endAt && opts.signal?.aborted !== true;

  const write = async (w: Rng, claim: string, token: bigint, resource = w.pick(RESOURCES)): Promise<void> => {
    const key = claimFenceKey(NAMESPACE, claim);
    const object = w.pick(OBJECTS);
    const sentMs = performance.now();
    let outcome: FenceWrite["outcome"];
    try {
      outcome = await stores.write(resource, key, object, token, `${claim}@${token}`);
    } catch (err) {
      outcome = "unknown";
      opts.log(`unknown outcome (${resource}): ${err instanceof Error ? err.message : String(err)}`);
    }
    const fence = resource === "r2" ? `${key}#${object}` : key;
    result.writes.push({ resource, fence, token, sentMs, answeredMs: performance.now(), outcome });
  };

  const owner = async (index: number, w: Rng): Promise<void> => {
    for (let n = 0; running(); n++) {
      const claim = w.pick(CLAIMS);
      const generationId = `owner-${index}-${n}`;
      let token: bigint;
      try {
        token = (await backend.acquireClaim({ claimName: claim, generationId, ttlMs })).fencingToken;
      } catch {
        await sleep(w.int(1, 10));
        continue;
      }
      let crashed = false;
      for (let k = w.int(5, 40); k > 0 && running(); k--) {
        if (w.chance(0.02)) {
          result.pauses++;
          await sleep(w.int(ttlMs, 3 * ttlMs));
        }
        if (w.chance(0.01)) {
          result.crashes++;
          const last = write(w, claim, token);
          inFlight.add(last);
          void last.finally(() => inFlight.delete(last));
          crashed = true;
          break;
        }
        // A burst of 1–4 concurrent writes under one token, as an owner with parallel work has.
        await Promise.all(Array.from({ length: w.int(1, 4) }, () => write(w, claim, token)));
      }
      if (!crashed) await backend.releaseClaim({ claimName: claim, generationId, token }).catch(() => undefined);
    }
  };

  const operator = async (w: Rng): Promise<void> => {
    for (let n = 0; running(); n++) {
      await sleep(w.int(50, 250));
      const claim = w.pick(CLAIMS);
      const record = await backend.getClaim(claim).catch(() => undefined);
      if (record?.phase !== "owned") continue;
      if (w.chance(0.5)) {
        // Evict: the owner is not told and keeps writing with its token until its next renew
        // would fail; whoever acquires next writes with a greater one.
        const evicted = await backend.evictClaim({ claimName: claim, note: `torture ${n}` }).catch(() => undefined);
        if (evicted?.reason === "evicted") result.evictions++;
        continue;
      }
      const move = {
        claimName: claim,
        fromGeneration: record.ownerGeneration,
        toGeneration: `operator-${n}`,
        ttlMs,
      };
      try {
        await backend.prepareTransfer({ ...move, token: record.fencingToken });
        const taken = await backend.commitTransfer({ ...move, expectedToken: record.fencingToken });
        result.takeovers++;
        for (const resource of RESOURCES) await write(w, claim, taken.fencingToken, resource);
        await backend.releaseClaim({ claimName: claim, generationId: move.toGeneration, token: taken.fencingToken });
      } catch {
        // The owner released or expired meanwhile: nothing to take over.
      }
    }
  };

  const progress = setInterval(() => opts.log(`writes ${result.writes.length}`), 10_000);
  try {
    await Promise.all([...Array.from({ length: opts.owners }, (_, i) => owner(i, rng.fork())), operator(rng.fork())]);
    await Promise.all(inFlight);
  } finally {
    clearInterval(progress);
    await backend.close();
    await stores.close();
  }
  return result;
}
