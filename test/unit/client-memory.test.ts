/**
 * MemoryClaimsBackend specifics beyond the shared contract: the expiry timer on the
 * injected clock (to the millisecond), watch history limits, operation-id retention,
 * cancellation and close.
 */
import { describe, expect, it } from "vitest";
import type { ClaimWatchItem } from "../../src/client/claims/claims-backend.ts";
import { RETAINED_EVENTS } from "../../src/protocol/watch.ts";
import { MemoryClaimsBackend } from "../../src/client/claims/memory-claims-backend.ts";
import { TokenSeedingBackend } from "../contract/token-seeding-backend.ts";
import { OPERATION_RETENTION_COUNT, OPERATION_RETENTION_MS } from "../../src/core/claim-operations.ts";
import { ManualClock, flushMicrotasks } from "../../src/core/clock.ts";
import type { ShiftlockError } from "../../src/protocol/errors.ts";

function setup() {
  const clock = new ManualClock(1_700_000_000_000);
  return { clock, backend: new MemoryClaimsBackend({ clock }) };
}

/** Items available right now (the watch is synchronous inside); leaves one next() pending. */
async function ready(it: AsyncIterator<ClaimWatchItem>): Promise<ClaimWatchItem[]> {
  const out: ClaimWatchItem[] = [];
  for (;;) {
    let settled: IteratorResult<ClaimWatchItem> | undefined;
    void it.next().then((r) => (settled = r));
    await flushMicrotasks();
    if (settled === undefined || settled.done === true) return out;
    out.push(settled.value);
  }
}

describe("MemoryClaimsBackend", () => {
  it("expires exactly when the clock passes the deadline, and tells watchers", async () => {
    const { clock, backend } = setup();
    const a = await backend.acquireClaim({ claimName: "c", generationId: "a", ttlMs: 1_000 });
    const it = backend.watchClaim("c")[Symbol.asyncIterator]();
    expect((await it.next()).value).toMatchObject({ type: "snapshot" });
    const next = it.next();
    let heard = false;
    void next.then(() => (heard = true));
    await clock.advance(1_000); // now == expiresAtMs: still held (expiry is strict)
    expect(heard).toBe(false);
    expect((await backend.getClaim("c")).phase).toBe("owned");
    await clock.advance(1);
    expect(heard).toBe(true);
    expect((await next).value).toMatchObject({
      type: "event",
      reason: "expired",
      timeMs: a.expiresAtMs + 1,
      claim: { phase: "unowned", previousOwner: "a", fencingToken: a.fencingToken },
    });
    await backend.close();
  });

  it("renewing moves the expiry timer", async () => {
    const { clock, backend } = setup();
    const a = await backend.acquireClaim({ claimName: "c", generationId: "a", ttlMs: 1_000 });
    await clock.advance(900);
    await backend.renewClaim({ claimName: "c", generationId: "a", token: a.fencingToken, ttlMs: 1_000 });
    await clock.advance(900);
    expect((await backend.getClaim("c")).phase).toBe("owned");
    await clock.advance(101);
    expect((await backend.getClaim("c")).reason).toBe("expired");
    await backend.close();
  });

  it(`resuming beyond the last ${RETAINED_EVENTS} events gets a truncated snapshot`, async () => {
    const { backend } = setup();
    for (let i = 0; i < RETAINED_EVENTS; i++) {
      const a = await backend.acquireClaim({ claimName: "c", generationId: `g${i}`, ttlMs: 60_000 });
      await backend.releaseClaim({ claimName: "c", generationId: `g${i}`, token: a.fencingToken });
    }
    const current = await backend.getClaim("c");
    expect(current.version).toBe(BigInt(2 * RETAINED_EVENTS));
    const old = backend.watchClaim("c", { afterVersion: 1n })[Symbol.asyncIterator]();
    expect(await ready(old)).toEqual([{ type: "snapshot", claim: current, truncated: true }]);
    const recent = backend.watchClaim("c", { afterVersion: current.version - 2n })[Symbol.asyncIterator]();
    expect((await ready(recent)).map((i) => i.type === "event" && i.reason)).toEqual(["acquired", "released"]);
    // A resume point ahead of the claim (e.g. the backend was recreated) also gets a fresh baseline.
    const ahead = backend.watchClaim("c", { afterVersion: current.version + 5n })[Symbol.asyncIterator]();
    expect(await ready(ahead)).toEqual([{ type: "snapshot", claim: current, truncated: true }]);
    await backend.close();
  });

  it("remembers operation ids for at least 1,000 operations and at least an hour", async () => {
    const { clock, backend } = setup();
    const a = await backend.acquireClaim({ claimName: "c", generationId: "a", ttlMs: 86_400_000 });
    const renew = (i: number, ttlMs = 86_400_000) =>
      backend.renewClaim({ claimName: "c", generationId: "a", token: a.fencingToken, ttlMs, operationId: `r${i}` });
    for (let i = 0; i <= OPERATION_RETENTION_COUNT; i++) await renew(i);
    // 1,001 operations but all younger than an hour: the oldest is still known.
    expect(((await renew(0, 100).catch((e: unknown) => e)) as ShiftlockError).code).toBe("operation_id_conflict");
    await clock.advance(OPERATION_RETENTION_MS + 1);
    await renew(OPERATION_RETENTION_COUNT + 1); // the write that prunes
    // r0 is now both older than an hour and more than 1,000 operations back: forgotten, so it runs anew.
    expect((await renew(0, 200)).expiresAtMs).toBe(clock.nowMs() + 200);
    // r900 is old but within the last 1,000: still a conflict.
    expect(((await renew(900, 100).catch((e: unknown) => e)) as ShiftlockError).code).toBe("operation_id_conflict");
    await backend.close();
  });

  it("forceSetToken seeds a token for overflow checks", async () => {
    const backend = new TokenSeedingBackend({ clock: new ManualClock(1_700_000_000_000) });
    backend.forceSetToken("c", 41n);
    expect((await backend.acquireClaim({ claimName: "c", generationId: "a", ttlMs: 1_000 })).fencingToken).toBe(42n);
    await backend.close();
  });

  it("honours an aborted signal and refuses everything after close()", async () => {
    const { backend } = setup();
    const controller = new AbortController();
    const reason = new Error("stop");
    controller.abort(reason);
    await expect(
      backend.acquireClaim({ claimName: "c", generationId: "a", ttlMs: 1_000 }, { signal: controller.signal }),
    ).rejects.toBe(reason);
    await expect(backend.getClaim("c")).rejects.toMatchObject({ code: "claim_not_found" });
    const it = backend.watchClaim("c")[Symbol.asyncIterator]();
    await it.next();
    const pending = it.next();
    await backend.close();
    expect((await pending).done).toBe(true);
    await expect(backend.getClaim("c")).rejects.toMatchObject({ code: "invalid_request" });
  });
});
