/**
 * The client's claim watch against the real server over a real WebSocket from Node:
 * events as they happen, both ways of sending the token, and a slow consumer that gets
 * closed with 4008 and resumes without losing or repeating an event.
 */
import { describe, expect, inject, it } from "vitest";
import WebSocket from "ws";
import type { ClaimWatchItem } from "../../src/client/claims/claims-backend.ts";
import { HttpClaimsBackend } from "../../src/client/claims/http-claims-backend.ts";

/** `ws`, counting connections and the close codes the server sent. */
class CountingWebSocket extends WebSocket {
  static opened = 0;
  static closeCodes: number[] = [];
  constructor(url: string, protocols?: string | string[], options?: WebSocket.ClientOptions) {
    super(url, protocols, options);
    CountingWebSocket.opened++;
    this.on("close", (code) => CountingWebSocket.closeCodes.push(code));
  }
}

function client(webSocketAuth: "header" | "ticket" | "subprotocol" = "header"): HttpClaimsBackend {
  return new HttpClaimsBackend({
    baseUrl: inject("serverUrl"),
    token: "dev-token",
    namespace: `e2e-watch-${crypto.randomUUID()}`,
    WebSocket: CountingWebSocket,
    webSocketAuth,
  });
}

async function next(it: AsyncIterator<ClaimWatchItem>): Promise<ClaimWatchItem> {
  const r = await it.next();
  if (r.done === true) throw new Error("watch ended");
  return r.value;
}

describe("claim watch against the server", () => {
  for (const auth of ["header", "ticket", "subprotocol"] as const) {
    it(`acquire → acquired, release → released (token in the ${auth})`, async () => {
      const backend = client(auth);
      const claim = `w-${crypto.randomUUID()}`;
      const watch = backend.watchClaim(claim);
      const it = watch[Symbol.asyncIterator]();
      try {
        expect(await next(it)).toEqual({ type: "snapshot", claim: null, truncated: false });
        const a = await backend.acquireClaim({ claimName: claim, generationId: "g1", ttlMs: 60_000 });
        expect(await next(it)).toMatchObject({ type: "event", reason: "acquired", claim: a });
        const r = await backend.releaseClaim({ claimName: claim, generationId: "g1", token: a.fencingToken });
        expect(await next(it)).toMatchObject({ type: "event", reason: "released", claim: r });
      } finally {
        await backend.close();
      }
    });
  }

  it("a wrong token ends the watch with unauthorized instead of retrying forever", async () => {
    const backend = new HttpClaimsBackend({
      baseUrl: inject("serverUrl"),
      token: "not-a-token",
      namespace: "e2e",
      WebSocket,
    });
    const it = backend.watchClaim("x")[Symbol.asyncIterator]();
    await expect(it.next()).rejects.toMatchObject({ code: "unauthorized" });
    await backend.close();
  });

  it("a consumer that stops reading is closed with 4008 and resumes: every event once, in order", async () => {
    const backend = client();
    CountingWebSocket.opened = 0;
    CountingWebSocket.closeCodes = [];
    const claim = `slow-${crypto.randomUUID()}`;
    const watch = backend.watchClaim(claim, { afterVersion: 0n });
    const it = watch[Symbol.asyncIterator]();
    try {
      // 540 cycles = 1,080 events: more than the server lets a silent subscriber owe (1,024).
      const cycles = 540;
      for (let i = 0; i < cycles; i++) {
        const a = await backend.acquireClaim({ claimName: claim, generationId: `g${i}`, ttlMs: 60_000 });
        await backend.releaseClaim({ claimName: claim, generationId: `g${i}`, token: a.fencingToken });
      }
      const seen: bigint[] = [];
      while (seen.length < 2 * cycles) {
        const item = await next(it);
        expect(item.type).toBe("event");
        if (item.type === "event") seen.push(item.claim.version);
      }
      // Acquire and release each bump the version by one and are both events: 1..1080, no gap.
      expect(seen).toEqual(Array.from({ length: 2 * cycles }, (_, i) => BigInt(i + 1)));
      expect(CountingWebSocket.closeCodes).toContain(4008);
      expect(CountingWebSocket.opened).toBeGreaterThanOrEqual(2);
    } finally {
      await backend.close();
    }
  }, 240_000);
});
