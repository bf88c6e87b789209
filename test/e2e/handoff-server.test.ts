// The handoff runtime against the real Worker (`npm start`), over HTTP and WebSockets:
// ownership, handoff commit with a successor adopting on the commit event (its claims bound
// to its lease epoch), the handoff's one prepare request and one commit request (batch,
// docs/protocol.md#batch), abort with the lease going on, a partial transfer rolled back,
// and (unbound) loss on a stale token.
import { describe, expect, inject, it } from "vitest";
import WebSocket from "ws";
import {
  GenerationSession,
  HttpClaimsBackend,
  hasCode,
  type FetchLike,
  type GenerationSessionConfig,
  type RuntimeEvent,
} from "../../src/client/index.ts";

const namespace = `e2e-handoff-${crypto.randomUUID().slice(0, 8)}`;

function backend(fetch?: FetchLike): HttpClaimsBackend {
  return new HttpClaimsBackend({
    baseUrl: inject("serverUrl"),
    token: "dev-token",
    namespace,
    WebSocket: WebSocket,
    ...(fetch === undefined ? {} : { fetch }),
  });
}

async function open(
  id: string,
  events: RuntimeEvent[] = [],
  fetch?: FetchLike,
  extra: Partial<GenerationSessionConfig> = {},
): Promise<GenerationSession> {
  const session = await GenerationSession.open({
    service: "e2e",
    instanceId: id,
    generationId: `${id}-${crypto.randomUUID().slice(0, 8)}`,
    backend: backend(fetch),
    leaseTtlMs: 4_000,
    renewIntervalMs: 500,
    acquireIntervalMs: 100,
    transferTimeoutMs: 5_000,
    ...extra,
  });
  session.onAny((e) => events.push(e));
  return session;
}

/** Resolve once `count` events of `type` have been seen (event-driven, no fixed sleeps). */
function nextEvents(session: GenerationSession, type: RuntimeEvent["type"], count: number): Promise<void> {
  return new Promise((resolve) => {
    let seen = 0;
    const off = session.onAny((e) => {
      if (e.type === type && ++seen >= count) {
        off();
        resolve();
      }
    });
  });
}

describe("handoff runtime on the real service", () => {
  it("one owner; commit retires the owner and the waiting successor adopts with token + 1", async () => {
    const claim = `billing-${crypto.randomUUID()}`;
    const a = await open("gen-a");
    const b = await open("gen-b");
    const admin = backend();
    const old = await a.claim(claim).waitForOwnership();
    await expect(admin.acquireClaim({ claimName: claim, generationId: "intruder", ttlMs: 1_000 })).rejects.toSatisfy(
      (e) => hasCode(e, "claim_held"),
    );
    const waiting = b.claim(claim).waitForOwnership();
    const result = await a.handoffTo(b.generationId);
    const adopted = await waiting;
    expect(adopted.token).toBe(old.token + 1n);
    expect(result.claims[0]!.token).toBe(old.token + 1n);
    expect(old.endReason).toBe("transferred");
    await a.flush();
    expect((await admin.getGeneration(a.generationId)).state).toBe("retired");
    // Bound at the commit to the successor's lease epoch, which its session keeps.
    expect(await admin.getClaim(claim)).toMatchObject({
      ownerGeneration: b.generationId,
      phase: "owned",
      bound: true,
      leaseEpoch: b.leaseEpoch!.epoch,
    });
    await expect(
      admin.renewClaim({ claimName: claim, generationId: a.generationId, token: old.token, ttlMs: 1_000 }),
    ).rejects.toSatisfy((e) => hasCode(e, "not_owner"));
    await nextEvents(b, "lease.renewed", 1);
    expect(adopted.held).toBe(true);
    await b.close();
    expect((await admin.getClaim(claim)).phase).toBe("unowned");
    await admin.close();
  });

  it("hands 16 claims over with one prepare request and one commit request", async () => {
    const sent: string[] = [];
    const counting: FetchLike = (url, init) => {
      const body = typeof init.body === "string" ? (JSON.parse(init.body) as { ops?: { op: string }[] }) : {};
      sent.push(
        `${init.method ?? "GET"} ${new URL(url).pathname.split("/").slice(4).join("/")} ${body.ops?.[0]?.op ?? ""}`,
      );
      return fetch(url, init);
    };
    const a = await open("gen-a", [], counting);
    const b = await open("gen-b-batch");
    const admin = backend();
    const names = Array.from({ length: 16 }, (_, i) => `batch-${i}-${crypto.randomUUID()}`);
    const leases = await Promise.all(names.map((c) => a.claim(c).tryAcquire()));
    sent.length = 0;
    const result = await a.handoffTo(b.generationId);
    expect(sent.filter((s) => s.startsWith("POST batch"))).toEqual(["POST batch prepare", "POST batch commit"]);
    // Bound claims: no renew, and no other single-claim call is made.
    expect(sent.filter((s) => s.includes("claims/"))).toEqual([]);
    expect(result.claims).toHaveLength(16);
    for (const l of leases) {
      expect(await admin.getClaim(l.claimName)).toMatchObject({
        ownerGeneration: b.generationId,
        fencingToken: l.token + 1n,
        bound: true,
      });
    }
    await b.close();
    await admin.close();
  });

  it("abort keeps ownership with the same token, still bound, and the lease goes on", async () => {
    const claim = `abort-${crypto.randomUUID()}`;
    const a = await open("gen-a");
    const admin = backend();
    const lease = await a.claim(claim).tryAcquire();
    const h = a.prepareHandoff("gen-b-never");
    await h.transfer();
    expect((await admin.getClaim(claim)).phase).toBe("reserved");
    await h.abort();
    expect(await admin.getClaim(claim)).toMatchObject({
      ownerGeneration: a.generationId,
      phase: "owned",
      fencingToken: lease.token,
      bound: true,
      leaseEpoch: a.leaseEpoch!.epoch,
    });
    const before = (await admin.getGeneration(a.generationId)).leaseExpiresAtMs;
    await nextEvents(a, "lease.renewed", 2);
    expect(lease.held).toBe(true);
    expect((await admin.getGeneration(a.generationId)).leaseExpiresAtMs).toBeGreaterThan(before);
    await a.close();
    await admin.close();
  });

  it("a refused prepare rolls back the claims already prepared", async () => {
    const [alpha, beta] = [`a-${crypto.randomUUID()}`, `b-${crypto.randomUUID()}`];
    const events: RuntimeEvent[] = [];
    const a = await open("gen-partial", events);
    const admin = backend();
    await a.claim(alpha).tryAcquire();
    const lb = await a.claim(beta).tryAcquire();
    // Behind the session's back, beta moves to a newer epoch of the same generation: the
    // session's token for it is now stale and its prepare is refused.
    await admin.releaseClaim({ claimName: beta, generationId: a.generationId, token: lb.token });
    await admin.acquireClaim({ claimName: beta, generationId: a.generationId, ttlMs: 4_000 });
    await expect(a.handoffTo("gen-b")).rejects.toBeInstanceOf(Error);
    expect(await admin.getClaim(alpha)).toMatchObject({ ownerGeneration: a.generationId, phase: "owned" });
    expect((await admin.getClaim(beta)).phase).toBe("owned");
    expect(a.state).toBe("active");
    expect(lb.held).toBe(false);
    await a.close();
    await admin.close();
  });

  it("unbound: a renew refused for a stale token fires the loss signal", async () => {
    const claim = `loss-${crypto.randomUUID()}`;
    const a = await open("gen-a", [], undefined, { bound: false });
    const admin = backend();
    const lease = await a.claim(claim).tryAcquire();
    const lost = new Promise<unknown>((resolve) =>
      lease.signal.addEventListener("abort", () => resolve(lease.signal.reason)),
    );
    await admin.releaseClaim({ claimName: claim, generationId: a.generationId, token: lease.token });
    await admin.acquireClaim({ claimName: claim, generationId: "gen-other", ttlMs: 4_000 });
    const reason = await lost;
    expect(hasCode(reason, "lease_lost")).toBe(true);
    expect(lease.endReason).toBe("lost");
    await a.close();
    await admin.close();
  });
});
