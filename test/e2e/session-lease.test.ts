// The session's lease against the real service (`npm start`), over its lease channel (the
// `ws` package): N bound claims kept by one channel with no HTTP request per keepalive; the
// service ending the epoch (the channel hears it, every bound claim is lost at once, a fresh
// epoch follows); a cut link (the loss fires before the deadline the service holds, and the
// service expires the claims only after it). Real time: waits are on events, bounded by the
// test timeout, never fixed sleeps.
import { describe, expect, inject, it } from "vitest";
import WebSocket from "ws";
import {
  GenerationSession,
  HttpClaimsBackend,
  type FetchLike,
  type Lease,
  type RuntimeEvent,
  type WebSocketConstructor,
  type WebSocketLike,
} from "../../src/client/index.ts";

const namespace = `e2e-lease-${crypto.randomUUID().slice(0, 8)}`;
const TTL_MS = 2_000;
const INTERVAL_MS = 400;

/** A network between the client and the service that a test can cut: nothing goes out or comes in. */
class Link {
  cut = false;
  /** HTTP requests sent through the link (method and path after the namespace). */
  readonly sent: string[] = [];

  readonly fetch: FetchLike = (url, init) => {
    if (this.cut) return Promise.reject(new TypeError("fetch failed: network unreachable"));
    this.sent.push(`${init.method ?? "GET"} ${new URL(url).pathname.split("/").slice(4).join("/")}`);
    return fetch(url, init);
  };

  /** `ws`, through the link: while cut, pings are lost, frames are not delivered, new connections fail. */
  webSocket(): WebSocketConstructor {
    const cut = (): boolean => this.cut;
    return class LinkedSocket implements WebSocketLike {
      private readonly ws: WebSocket;
      constructor(url: string, protocols?: string | string[], options?: { headers?: Record<string, string> }) {
        // Nothing listens on the discard port: a connection through a cut link is refused.
        this.ws = new WebSocket(cut() ? "ws://127.0.0.1:9/" : url, protocols, options);
      }
      get readyState(): number {
        return this.ws.readyState;
      }
      send(data: string): void {
        if (!cut()) this.ws.send(data);
      }
      close(code?: number, reason?: string): void {
        this.ws.close(code, reason);
      }
      addEventListener(type: string, listener: (event: never) => void): void {
        const pass = (event: unknown): void => {
          if (type !== "message" || !cut()) (listener as (e: unknown) => void)(event);
        };
        this.ws.addEventListener(type as "message", pass);
      }
    };
  }
}

function backend(link?: Link): HttpClaimsBackend {
  return new HttpClaimsBackend({
    baseUrl: inject("serverUrl"),
    token: "dev-token",
    namespace,
    WebSocket: link?.webSocket() ?? WebSocket,
    ...(link === undefined ? {} : { fetch: link.fetch }),
  });
}

async function open(link: Link, events: RuntimeEvent[]): Promise<GenerationSession> {
  const session = await GenerationSession.open({
    service: "e2e",
    instanceId: "lease",
    generationId: `lease-${crypto.randomUUID().slice(0, 8)}`,
    backend: backend(link),
    leaseTtlMs: TTL_MS,
    renewIntervalMs: INTERVAL_MS,
  });
  session.onAny((e) => events.push(e));
  return session;
}

/** Resolves with the first event of `type` (after now) that `match` accepts. */
function next<T extends RuntimeEvent["type"]>(
  session: GenerationSession,
  type: T,
  match: (e: RuntimeEvent<T>) => boolean = () => true,
): Promise<RuntimeEvent<T>> {
  return new Promise((resolve) => {
    const off = session.on(type, (e) => {
      if (!match(e)) return;
      off();
      resolve(e);
    });
  });
}

/** Resolves with the local time each lease's signal fired. */
function lossTimes(leases: Lease[]): Promise<number[]> {
  return Promise.all(
    leases.map((l) => new Promise<number>((resolve) => l.signal.addEventListener("abort", () => resolve(Date.now())))),
  );
}

describe("the session's lease on the real service", () => {
  it("20 bound claims are kept by the channel's pings: no HTTP request per keepalive, none per claim", async () => {
    const link = new Link();
    const a = await open(link, []);
    const admin = backend();
    const leases = await Promise.all(Array.from({ length: 20 }, (_, i) => a.claim(`kept-${i}`).tryAcquire()));
    const epoch = a.leaseEpoch!.epoch;
    link.sent.length = 0;
    const before = (await admin.getGeneration(a.generationId)).leaseExpiresAtMs;
    for (let i = 0; i < 5; i++) await next(a, "lease.renewed", (e) => e.via === "channel");
    expect(link.sent).toEqual([]);
    expect(leases.every((l) => l.held)).toBe(true);
    // The service saw the pings: its deadline (exact on GET) moved on.
    expect((await admin.getGeneration(a.generationId)).leaseExpiresAtMs).toBeGreaterThan(before);
    for (const l of leases) {
      expect(await admin.getClaim(l.claimName)).toMatchObject({
        ownerGeneration: a.generationId,
        bound: true,
        leaseEpoch: epoch,
      });
    }
    await a.close();
    await admin.close();
  });

  it("the service ends the epoch: every bound claim is lost at once, then a fresh epoch binds new claims", async () => {
    const link = new Link();
    const a = await open(link, []);
    const admin = backend();
    const leases = await Promise.all(["x", "y", "z"].map((c) => a.claim(`ended-${c}`).tryAcquire()));
    const lost = lossTimes(leases);
    const started = next(a, "lease.started");
    await admin.endGenerationLease(a.generationId);
    const times = await lost;
    expect(Math.max(...times) - Math.min(...times)).toBeLessThan(50);
    expect(leases.every((l) => l.endReason === "lost")).toBe(true);
    for (const l of leases) expect((await admin.getClaim(l.claimName)).phase).toBe("unowned");
    const fresh = await started;
    expect(fresh.epoch).toBe(2n);
    const again = await a.claim("ended-x").tryAcquire();
    expect(await admin.getClaim(again.claimName)).toMatchObject({ bound: true, leaseEpoch: 2n });
    await a.close();
    await admin.close();
  });

  it("a cut link: the loss fires before the deadline the service holds, which expires the claims after it", async () => {
    const link = new Link();
    const a = await open(link, []);
    const admin = backend();
    const leases = await Promise.all(["p", "q"].map((c) => a.claim(`cut-${c}-${crypto.randomUUID()}`).tryAcquire()));
    const watch = admin.watchClaim(leases[0]!.claimName);
    const expired = (async () => {
      for await (const item of watch) if (item.type === "event" && item.reason === "expired") return Date.now();
      return undefined;
    })();
    await next(a, "lease.renewed", (e) => e.via === "channel");
    const lost = lossTimes(leases);
    link.cut = true;
    // Nothing reaches the service any more: this is its deadline (GET is exact).
    const serverDeadlineMs = (await admin.getGeneration(a.generationId)).leaseExpiresAtMs;
    const firedAt = Math.max(...(await lost));
    expect(firedAt).toBeLessThan(serverDeadlineMs);
    expect(leases.every((l) => l.endReason === "lost")).toBe(true);
    // The service kept the claims until its deadline: nobody could have had them before the loss fired.
    const expiredAt = await expired;
    expect(expiredAt).toBeGreaterThan(firedAt);
    watch.close();
    // The link heals: a fresh epoch.
    const started = next(a, "lease.started");
    link.cut = false;
    expect((await started).epoch).toBe(2n);
    await a.close();
    await admin.close();
  });
});
