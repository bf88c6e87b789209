// The handoff runtime over HttpClaimsBackend and a counting fake transport (memory-fetch.ts):
// after the drain, every claim is prepared in ONE request and committed in ONE request
// (docs/protocol.md#operating-at-scale), whatever the number of claims up to 128, chunks of ≤ 128 beyond; a rollback
// aborts in one request; refused ops and lost answers inside a batch are handled as the
// single-op path handled them.
import { describe, expect, it } from "vitest";
import { HttpClaimsBackend } from "../../src/client/claims/http-claims-backend.ts";
import { MemoryClaimsBackend } from "../../src/client/claims/memory-claims-backend.ts";
import { GenerationSession, type GenerationSessionConfig, type RuntimeEvent } from "../../src/client/handoff/index.ts";
import { ManualClock } from "../../src/core/clock.ts";
import { hasCode } from "../../src/protocol/errors.ts";
import { advanceBy, flushMicrotasks } from "./handoff-fixtures.ts";
import { memoryServer, type ServedRequest } from "./memory-fetch.ts";

function setup() {
  const clock = new ManualClock(1_000_000);
  const memory = new MemoryClaimsBackend({ clock });
  const server = memoryServer(memory);
  const backend = new HttpClaimsBackend({ baseUrl: "http://fake", token: "t", namespace: "ns", fetch: server.fetch });
  const events: RuntimeEvent[] = [];
  const open = async (id: string, extra: Partial<GenerationSessionConfig> = {}): Promise<GenerationSession> => {
    const session = await GenerationSession.open({
      service: "svc",
      instanceId: id,
      generationId: id,
      backend,
      clock,
      leaseTtlMs: 10_000,
      transferTimeoutMs: 5_000,
      ...extra,
    });
    session.onAny((e) => events.push(e));
    return session;
  };
  return { clock, memory, server, open, events };
}

/** The batch requests among `requests` whose ops are all `op`, with their sizes. */
function batches(requests: ServedRequest[], op: string): number[] {
  return requests
    .filter((r) => r.operationId === "claimBatch" && r.ops?.every((o) => o === op))
    .map((r) => r.ops!.length);
}

/** Names of `n` claims, in the (name) order a handoff processes them. */
const claimNames = (n: number): string[] => Array.from({ length: n }, (_, i) => `c-${String(i).padStart(3, "0")}`);

describe("handoff in batches", () => {
  it.each([
    [1, true],
    [4, true],
    [16, true],
    [64, true],
    [16, false],
  ])("%i claims (bound: %s): one prepare request and one commit request", async (n, bound) => {
    const { server, open, memory } = setup();
    const a = await open("gen-a", { bound });
    await open("gen-b", { bound });
    const leases = [];
    for (const c of claimNames(n)) leases.push(await a.claim(c).tryAcquire());
    const from = server.requests.length;
    const result = await a.handoffTo("gen-b");
    const during = server.requests.slice(from);
    expect(batches(during, "prepare")).toEqual([n]);
    expect(batches(during, "commit")).toEqual([n]);
    // Nothing else touched the claims: the rest are generation state PATCHes.
    expect(during.filter((r) => r.operationId !== "claimBatch").map((r) => r.operationId)).toEqual(
      expect.arrayContaining(["updateGeneration"]),
    );
    expect(during.every((r) => r.operationId === "claimBatch" || r.operationId === "updateGeneration")).toBe(true);
    expect(result.claims.map((c) => [c.claim, c.token])).toEqual(leases.map((l) => [l.claimName, l.token + 1n]));
    for (const l of leases) {
      expect(await memory.getClaim(l.claimName)).toMatchObject({
        ownerGeneration: "gen-b",
        fencingToken: l.token + 1n,
        // Bound: committed into the successor's live epoch.
        bound,
        leaseEpoch: bound ? 1n : 0n,
      });
    }
    await a.flush();
    expect(a.state).toBe("retired");
  });

  it("a successor that holds no lease gets the claims unbound: one more prepare batch, then the commit with ttls", async () => {
    const { server, open, memory } = setup();
    const names = claimNames(3);
    const a = await open("gen-a");
    for (const c of names) await a.claim(c).tryAcquire();
    await memory.registerGeneration({ id: "gen-b", service: "svc", instanceId: "b" });
    const from = server.requests.length;
    const result = await a.handoffTo("gen-b");
    const during = server.requests.slice(from);
    // The bound prepare is refused no_lease for every claim; each is prepared again with a ttl.
    expect(batches(during, "prepare")).toEqual([3, 3]);
    expect(batches(during, "commit")).toEqual([3]);
    for (const c of result.claims) {
      expect(await memory.getClaim(c.claim)).toMatchObject({ ownerGeneration: "gen-b", bound: false, leaseEpoch: 0n });
    }
  });

  it("past 128 claims, each step is chunks of at most 128 ops", async () => {
    const { server, open } = setup();
    const a = await open("gen-a");
    await open("gen-b");
    for (const c of claimNames(130)) await a.claim(c).tryAcquire();
    const from = server.requests.length;
    const result = await a.handoffTo("gen-b");
    expect(batches(server.requests.slice(from), "prepare").sort((x, y) => y - x)).toEqual([128, 2]);
    expect(batches(server.requests.slice(from), "commit").sort((x, y) => y - x)).toEqual([128, 2]);
    expect(result.claims).toHaveLength(130);
  });

  it("one refused prepare in the batch: its lease is lost, the others are aborted in one request", async () => {
    const { server, open, memory, events } = setup();
    const names = claimNames(4);
    const a = await open("gen-a");
    await open("gen-b");
    const leases = [];
    for (const c of names) leases.push(await a.claim(c).tryAcquire());
    // Behind the session's back, c-002 moves to a newer epoch: its prepare is refused.
    const moved = names[2]!;
    await memory.releaseClaim({ claimName: moved, generationId: "gen-a", token: leases[2]!.token });
    await memory.acquireClaim({ claimName: moved, generationId: "gen-a", ttlMs: 10_000 });
    const from = server.requests.length;
    const err = await a.handoffTo("gen-b").catch((e: unknown) => e);
    expect(hasCode(err, "stale_token")).toBe(true);
    const during = server.requests.slice(from);
    expect(batches(during, "prepare")).toEqual([4]);
    expect(batches(during, "abort")).toEqual([3]);
    expect(batches(during, "commit")).toEqual([]);
    const aborted = events.flatMap((e) => (e.type === "transfer.aborted" ? [e.claim] : []));
    expect(aborted).toEqual(names.filter((c) => c !== moved));
    expect(leases[2]!.endReason).toBe("lost");
    expect(leases.filter((l) => l.held)).toHaveLength(3);
    for (const c of names) expect(await memory.getClaim(c)).toMatchObject({ ownerGeneration: "gen-a", phase: "owned" });
    expect(a.state).toBe("active");
    await a.close();
  });

  it("one refused commit in the batch: the others move, it is aborted back and the generation stays active", async () => {
    const { server, open, memory } = setup();
    const names = claimNames(3);
    const a = await open("gen-a");
    await open("gen-b");
    const leases = [];
    for (const c of names) leases.push(await a.claim(c).tryAcquire());
    const h = a.prepareHandoff("gen-b");
    await h.transfer();
    // The reservation of c-001 is withdrawn behind the session's back: its commit is no_transfer.
    await memory.abortTransfer({
      claimName: names[1]!,
      fromGeneration: "gen-a",
      toGeneration: "gen-b",
      expectedToken: leases[1]!.token,
    });
    const from = server.requests.length;
    const err = await h.commit().catch((e: unknown) => e);
    expect(hasCode(err, "no_transfer")).toBe(true);
    expect((err as { details: Record<string, unknown> }).details).toMatchObject({
      committed: [names[0], names[2]],
      failed: [names[1]],
    });
    expect(batches(server.requests.slice(from), "commit")).toEqual([3]);
    expect((await memory.getClaim(names[0]!)).ownerGeneration).toBe("gen-b");
    expect(await memory.getClaim(names[1]!)).toMatchObject({ ownerGeneration: "gen-a", phase: "owned" });
    expect(leases[1]!.held).toBe(true);
    await a.flush();
    expect(a.state).toBe("active");
    await a.close();
  });

  it("a commit batch whose answer is lost is sent again with the same operation ids: one token advance", async () => {
    const { server, open, memory, clock } = setup();
    const names = claimNames(4);
    const a = await open("gen-a");
    await open("gen-b");
    const leases = [];
    for (const c of names) leases.push(await a.claim(c).tryAcquire());
    let lose = 1;
    server.loseAnswer = (r) => r.ops?.[0] === "commit" && lose-- > 0;
    const from = server.requests.length;
    const committing = a.handoffTo("gen-b");
    await flushMicrotasks(200);
    await advanceBy(clock, 1_000, 50);
    const result = await committing;
    expect(batches(server.requests.slice(from), "commit")).toEqual([4, 4]);
    expect(result.claims.map((c) => c.token)).toEqual(leases.map((l) => l.token + 1n));
    for (const l of leases) expect((await memory.getClaim(l.claimName)).fencingToken).toBe(l.token + 1n);
    expect(a.state).toBe("retired");
  });
});
