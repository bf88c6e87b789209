/**
 * The HTTP client's claim watch against a scripted fake WebSocket and a manual clock:
 * reconnect and resume without gaps or duplicates (drop and 4008), truncated snapshots,
 * keep-alive pings, acknowledgements, permanent refusals and shutdown.
 */
import { describe, expect, it } from "vitest";
import type { ClaimWatchItem } from "../../src/client/claims/claims-backend.ts";
import { ACK_EVERY } from "../../src/client/transport/watch-socket.ts";
import type { WebSocketLike } from "../../src/client/transport/websocket.ts";
import { HttpClaimsBackend } from "../../src/client/claims/http-claims-backend.ts";
import type { FetchLike } from "../../src/client/transport/http-transport.ts";
import { emptyClaim } from "../../src/core/claim-machine.ts";
import { claimToWire, type ClaimRecord } from "../../src/protocol/claims.ts";
import { ManualClock, flushMicrotasks } from "../../src/core/clock.ts";
import { errorEnvelope, type ShiftlockError } from "../../src/protocol/errors.ts";

type Listener = (event: never) => void;

/** A WebSocket whose server side the test scripts. */
class FakeSocket implements WebSocketLike {
  static all: FakeSocket[] = [];
  readyState = 0;
  sent: string[] = [];
  private listeners = new Map<string, Listener[]>();

  constructor(
    readonly url: string,
    readonly protocols?: string | string[],
    readonly options?: { headers?: Record<string, string> },
  ) {
    FakeSocket.all.push(this);
  }

  addEventListener(type: string, listener: Listener): void {
    this.listeners.set(type, [...(this.listeners.get(type) ?? []), listener]);
  }

  private emit(type: string, event: unknown): void {
    for (const l of this.listeners.get(type) ?? []) (l as (e: unknown) => void)(event);
  }

  send(data: string): void {
    if (this.readyState !== 1) throw new Error("not open");
    this.sent.push(data);
  }

  close(code = 1000, reason = ""): void {
    this.serverClose(code, reason);
  }

  // Server side.
  open(): void {
    this.readyState = 1;
    this.emit("open", {});
  }
  deliver(message: unknown): void {
    this.emit("message", { data: JSON.stringify(message) });
  }
  serverClose(code: number, reason = ""): void {
    if (this.readyState === 3) return;
    this.readyState = 3;
    this.emit("close", { code, reason });
  }
}

function rec(version: bigint, patch: Partial<ClaimRecord> = {}): ClaimRecord {
  return { ...emptyClaim("c"), version, ...patch };
}
const snapshot = (claim: ClaimRecord | null, truncated = false) => ({
  type: "snapshot",
  claim: claim === null ? null : claimToWire(claim),
  ...(truncated ? { truncated: true } : {}),
});
const event = (version: bigint, reason = "acquired") => ({
  type: "event",
  reason,
  claim: claimToWire(rec(version, { reason: reason as ClaimRecord["reason"] })),
  timeMs: 5,
});

const latestSocket = (): FakeSocket => FakeSocket.all[FakeSocket.all.length - 1]!;
const latest = latestSocket;

function setup(probe: () => Response = () => new Response(null, { status: 200 })) {
  FakeSocket.all = [];
  const clock = new ManualClock();
  const fetch: FetchLike = () => Promise.resolve(probe());
  const backend = new HttpClaimsBackend({
    baseUrl: "http://svc.test",
    token: "tok",
    namespace: "ns",
    fetch,
    WebSocket: FakeSocket,
    clock,
    watchPingIntervalMs: 10_000,
    watchReconnectMinMs: 100,
    watchReconnectMaxMs: 1_000,
  });
  const latest = latestSocket;
  /** Let the watch notice the close, then let its (jittered, ≤ max) backoff pass. */
  const afterBackoff = async (): Promise<void> => {
    await flushMicrotasks();
    await clock.advance(1_000);
  };
  return { backend, clock, latest, afterBackoff };
}

/** Collect what the consumer has been handed so far (without waiting for more). */
async function drain(it: AsyncIterator<ClaimWatchItem>, count: number): Promise<ClaimWatchItem[]> {
  const out: ClaimWatchItem[] = [];
  for (let i = 0; i < count; i++) {
    const r = await it.next();
    if (r.done === true) break;
    out.push(r.value);
  }
  return out;
}
const versions = (items: ClaimWatchItem[]) =>
  items.map((i) =>
    i.type === "event" ? `e${i.claim.version}` : `s${i.claim?.version ?? "-"}${i.truncated ? "t" : ""}`,
  );

describe("claim watch over WebSocket", () => {
  it("connects to the watch URL with the token as a header (injected ws) or as the subprotocol", async () => {
    const { backend, latest } = setup();
    const w = backend.watchClaim("a/b");
    expect(latest().url).toBe("ws://svc.test/v1/ns/ns/claims/a%2Fb/watch");
    expect(latest().options?.headers?.["Authorization"]).toBe("Bearer tok");
    w.close();
    const browserLike = new HttpClaimsBackend({
      baseUrl: "https://svc.test",
      token: "tok",
      namespace: "ns",
      WebSocket: FakeSocket,
      webSocketAuth: "subprotocol",
    });
    const w2 = browserLike.watchClaim("c", { afterVersion: 7n });
    expect(latest().url).toBe("wss://svc.test/v1/ns/ns/claims/c/watch?afterVersion=7");
    expect(latest().protocols).toEqual(["shiftlock.bearer.tok"]);
    w2.close();
    await backend.close();
  });

  it("browsers (no injected WebSocket) ask for a watch ticket and open the socket with it, never the token", async () => {
    const requests: { url: string; init: RequestInit }[] = [];
    const fetch: FetchLike = (url, init) => {
      requests.push({ url, init });
      return Promise.resolve(
        new Response(JSON.stringify({ ticket: "v1.T.M", expiresAtMs: 60_000 }), {
          status: 201,
          headers: { "Content-Type": "application/json" },
        }),
      );
    };
    const global = globalThis as { WebSocket?: unknown };
    const saved = global.WebSocket;
    global.WebSocket = FakeSocket;
    try {
      const browser = new HttpClaimsBackend({ baseUrl: "https://svc.test/base", token: "tok", namespace: "ns", fetch });
      const w = browser.watchClaim("a/b", { afterVersion: 7n });
      await flushMicrotasks();
      expect(requests).toHaveLength(1);
      expect(requests[0]!.url).toBe("https://svc.test/base/v1/ns/ns/watch-tickets");
      expect(requests[0]!.init.method).toBe("POST");
      expect(JSON.parse(requests[0]!.init.body as string)).toEqual({ path: "/v1/ns/ns/claims/a%2Fb/watch" });
      expect(latest().url).toBe("wss://svc.test/base/v1/ns/ns/claims/a%2Fb/watch?afterVersion=7&ticket=v1.T.M");
      expect(latest().protocols).toBeUndefined();
      expect(JSON.stringify([latest().url, latest().protocols, latest().options])).not.toContain("tok");
      w.close();
      await browser.close();
    } finally {
      global.WebSocket = saved;
    }
  });

  it("after a drop, resumes from the last version: no gap, no duplicate", async () => {
    const { backend, latest, afterBackoff } = setup();
    const w = backend.watchClaim("c");
    const it = w[Symbol.asyncIterator]();
    const first = latest();
    first.open();
    first.deliver(snapshot(rec(3n)));
    first.deliver(event(4n));
    first.deliver(event(5n, "released"));
    first.serverClose(1006);
    await afterBackoff();
    const second = latest();
    expect(second).not.toBe(first);
    expect(second.url).toMatch(/afterVersion=5$/);
    second.open();
    second.deliver(event(5n, "released")); // a replay overlap must not be yielded twice
    second.deliver(event(6n));
    expect(versions(await drain(it, 4))).toEqual(["s3", "e4", "e5", "e6"]);
    w.close();
    expect((await it.next()).done).toBe(true);
    expect(second.readyState).toBe(3);
  });

  it("a drop before the first snapshot starts over with a snapshot", async () => {
    const { backend, latest, afterBackoff } = setup();
    const it = backend.watchClaim("c")[Symbol.asyncIterator]();
    latest().open();
    latest().serverClose(1006);
    await afterBackoff();
    expect(latest().url).not.toMatch(/afterVersion/);
    latest().open();
    latest().deliver(snapshot(null));
    expect(await drain(it, 1)).toEqual([{ type: "snapshot", claim: null, truncated: false }]);
    await backend.close();
  });

  it("on 4008 waits until the consumer drained its buffer, then resumes after the last version", async () => {
    const { backend, clock, latest } = setup();
    const it = backend.watchClaim("c", { afterVersion: 10n })[Symbol.asyncIterator]();
    const first = latest();
    first.open();
    first.deliver(event(11n));
    first.deliver(event(12n));
    first.serverClose(4008, "lagging");
    await clock.advance(5_000);
    expect(FakeSocket.all).toHaveLength(1); // still holding two unread events: no reconnect yet
    expect(versions(await drain(it, 2))).toEqual(["e11", "e12"]);
    await flushMicrotasks();
    expect(FakeSocket.all).toHaveLength(2);
    expect(latest().url).toMatch(/afterVersion=12$/);
    latest().open();
    latest().deliver(event(13n));
    expect(versions(await drain(it, 1))).toEqual(["e13"]);
    await backend.close();
  });

  it("surfaces a truncated snapshot as the new baseline", async () => {
    const { backend, latest, afterBackoff } = setup();
    const it = backend.watchClaim("c")[Symbol.asyncIterator]();
    latest().open();
    latest().deliver(snapshot(rec(2n)));
    latest().serverClose(1001);
    await afterBackoff();
    latest().open();
    latest().deliver(snapshot(rec(900n), true));
    latest().deliver(event(901n));
    expect(versions(await drain(it, 3))).toEqual(["s2", "s900t", "e901"]);
    await backend.close();
  });

  it("pings every interval and replaces a connection that stayed silent for a whole interval", async () => {
    const { backend, clock, latest, afterBackoff } = setup();
    const it = backend.watchClaim("c")[Symbol.asyncIterator]();
    const socket = latest();
    socket.open();
    socket.deliver(snapshot(null));
    await clock.advance(10_000);
    expect(socket.sent).toEqual(['{"type":"ping"}']);
    socket.deliver({ type: "pong" });
    await clock.advance(10_000);
    expect(socket.sent).toHaveLength(2);
    // No pong this time: the next tick declares the connection dead and reconnects.
    await clock.advance(10_000);
    expect(socket.readyState).toBe(3);
    await afterBackoff();
    expect(FakeSocket.all).toHaveLength(2);
    expect(latest().url).toMatch(/afterVersion=0$/);
    expect(versions(await drain(it, 1))).toEqual(["s-"]);
    await backend.close();
  });

  it("abandons a handshake that does not complete within one ping interval", async () => {
    const { backend, clock, latest } = setup();
    const it = backend.watchClaim("c")[Symbol.asyncIterator]();
    const stuck = latest();
    await clock.advance(10_000);
    expect(stuck.readyState).toBe(3);
    await flushMicrotasks();
    await clock.advance(1_000);
    expect(FakeSocket.all).toHaveLength(2);
    latest().open();
    latest().deliver(snapshot(null));
    expect(versions(await drain(it, 1))).toEqual(["s-"]);
    await backend.close();
  });

  it(`acknowledges every ${ACK_EVERY} consumed events`, async () => {
    const { backend, latest } = setup();
    const it = backend.watchClaim("c", { afterVersion: 0n })[Symbol.asyncIterator]();
    const socket = latest();
    socket.open();
    for (let v = 1n; v <= BigInt(ACK_EVERY) + 1n; v++) socket.deliver(event(v));
    expect(socket.sent).toEqual([]); // received is not consumed
    await drain(it, ACK_EVERY);
    expect(socket.sent).toEqual([JSON.stringify({ type: "ack", version: String(ACK_EVERY) })]);
    await backend.close();
  });

  it("ends with the refusal when the server rejects the watch for good (probe says unauthorized)", async () => {
    const { backend, latest } = setup(
      () => new Response(JSON.stringify(errorEnvelope("unauthorized")), { status: 401 }),
    );
    const it = backend.watchClaim("c")[Symbol.asyncIterator]();
    latest().serverClose(1006); // handshake refused: browsers see no status
    const err = (await it.next().catch((e: unknown) => e)) as ShiftlockError;
    expect(err.code).toBe("unauthorized");
    expect(FakeSocket.all).toHaveLength(1);
  });

  it("keeps retrying through transient failures (probe finds the claim absent or the network down)", async () => {
    const answers = [
      () => new Response(JSON.stringify(errorEnvelope("claim_not_found")), { status: 404 }),
      () => new Response("bad gateway", { status: 502 }),
    ];
    const { backend, latest, afterBackoff } = setup(() => (answers.shift() ?? answers[0]!)());
    const it = backend.watchClaim("c")[Symbol.asyncIterator]();
    latest().serverClose(1006);
    await afterBackoff();
    latest().serverClose(1006);
    await afterBackoff();
    expect(FakeSocket.all).toHaveLength(3);
    latest().open();
    latest().deliver(snapshot(null));
    expect(versions(await drain(it, 1))).toEqual(["s-"]);
    await backend.close();
  });

  it("the signal ends the iteration with its reason and closes the socket", async () => {
    const { backend, latest } = setup();
    const controller = new AbortController();
    const it = backend.watchClaim("c", { signal: controller.signal })[Symbol.asyncIterator]();
    latest().open();
    const pending = it.next();
    const reason = new Error("bye");
    controller.abort(reason);
    await expect(pending).rejects.toBe(reason);
    expect(latest().readyState).toBe(3);
  });

  it("breaking out of for-await closes the socket; backend.close() ends every watch", async () => {
    const { backend, latest } = setup();
    const w = backend.watchClaim("c");
    const s1 = latest();
    s1.open();
    s1.deliver(snapshot(null));
    for await (const item of w) {
      expect(item.type).toBe("snapshot");
      break;
    }
    expect(s1.readyState).toBe(3);
    const w2 = backend.watchClaim("c")[Symbol.asyncIterator]();
    await backend.close();
    expect((await w2.next()).done).toBe(true);
    expect(latest().readyState).toBe(3);
  });
});
