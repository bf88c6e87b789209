// The `shiftlock` CLI in-process: `main(argv, io)` against the in-memory backends, with
// captured output — argument handling, JSON output, error messages and exit statuses.
import { describe, expect, it } from "vitest";
import { main, type CliIo } from "../../src/cli/main.ts";
import { MemoryClaimsBackend } from "../../src/client/claims/memory-claims-backend.ts";
import { MemoryCoordinator } from "../../src/client/coord/memory-coord.ts";
import { flushMicrotasks, ManualClock } from "../../src/core/clock.ts";

function cli(extra: Partial<CliIo> = {}) {
  const out: string[] = [];
  const err: string[] = [];
  const claims = new MemoryClaimsBackend();
  const coordinator = new MemoryCoordinator();
  const io: CliIo = {
    stdout: (t) => out.push(t),
    stderr: (t) => err.push(t),
    env: {},
    claims,
    coordinator,
    ...extra,
  };
  const run = async (...argv: string[]) => {
    out.length = 0;
    err.length = 0;
    const code = await main(argv, io);
    return { code, out: out.join(""), err: err.join("") };
  };
  return { run, claims };
}

type Doc = Record<string, Record<string, unknown> | undefined>;
const json = (text: string): Doc => JSON.parse(text.trim().split("\n").at(-1)!) as Doc;

describe("shiftlock claims", () => {
  it("acquires, reads and renews with --json (counters as decimal strings)", async () => {
    const { run } = cli();
    const c = `c-${crypto.randomUUID()}`;
    const acquired = await run("claims", "acquire", c, "--generation", "g1", "--ttl-ms", "5000", "--json");
    expect(acquired.code).toBe(0);
    expect(json(acquired.out).claim).toMatchObject({
      name: c,
      ownerGeneration: "g1",
      fencingToken: "1",
      phase: "owned",
    });
    const got = await run("claims", "get", c, "--json");
    expect(json(got.out).claim?.["fencingToken"]).toBe("1");
    const renewed = await run(
      "claims",
      "renew",
      c,
      "--generation",
      "g1",
      "--fencing-token",
      "1",
      "--ttl",
      "1m",
      "--json",
    );
    expect(json(renewed.out).claim?.["reason"]).toBe("renewed");
  });

  it("takes durations with a unit or in milliseconds, not both; renew needs one", async () => {
    const { run, claims } = cli();
    const acquired = await run("claims", "acquire", "c", "--generation", "g1", "--ttl", "1m30s", "--json");
    const claim = json(acquired.out).claim!;
    expect(Number(claim["expiresAtMs"]) - Number(claim["acquiredAtMs"])).toBe(90_000);
    const both = await run("claims", "acquire", "d", "--generation", "g1", "--ttl", "15s", "--ttl-ms", "15000");
    expect(both).toMatchObject({ code: 2, err: "shiftlock: give --ttl or --ttl-ms, not both (see --help)\n" });
    expect((await run("claims", "acquire", "d", "--generation", "g1", "--ttl", "15")).err).toContain(
      "--ttl needs a unit (ms, s, m or h), e.g. 15s",
    );
    // A renew without a ttl would silently cut a long lease to the default: refused before any request.
    const renew = await run("claims", "renew", "c", "--generation", "g1", "--fencing-token", "1");
    expect(renew.code).toBe(2);
    expect(renew.err).toContain("--ttl (or --ttl-ms) is required");
    expect((await claims.getClaim("c")).version).toBe(1n); // unchanged
    const ms = await run("claims", "renew", "c", "--generation", "g1", "--fencing-token", "1", "--ttl-ms", "60000");
    expect(ms.code).toBe(0);
  });

  it("--version prints the package version", async () => {
    const { run } = cli();
    const { version } = (await import("../../package.json", { with: { type: "json" } })).default;
    expect(await run("--version")).toMatchObject({ code: 0, out: `${version}\n` });
  });

  it("a missing claim or generation names the namespace", async () => {
    const { run } = cli({ env: { SHIFTLOCK_NAMESPACE: "payments" } });
    const claim = await run("claims", "get", "nope");
    expect(claim.code).toBe(1);
    expect(claim.err).toContain('claim_not_found: no such claim in namespace "payments"');
    const generation = await run("generations", "get", "nope", "--namespace", "orders");
    expect(generation.err).toContain('generation_not_found: no such generation in namespace "orders"');
  });

  it("prints human-readable records by default", async () => {
    const { run } = cli();
    const res = await run("claims", "acquire", "c", "--generation", "g1");
    expect(res.code).toBe(0);
    expect(res.out).toMatch(/claim\.fencingToken\s+1\n/);
    expect(res.out).toMatch(/claim\.phase\s+owned/);
  });

  it("explains service refusals and exits 1; with --json the error envelope goes to stderr", async () => {
    const { run } = cli();
    await run("claims", "acquire", "c", "--generation", "g1");
    const held = await run("claims", "acquire", "c", "--generation", "g2");
    expect(held.code).toBe(1);
    expect(held.err).toContain("claim_held");
    expect(held.err).toContain("owner g1 token 1");
    const stale = await run("claims", "release", "c", "--generation", "g1", "--fencing-token", "9", "--json");
    expect(stale.code).toBe(1);
    expect(json(stale.err).error?.["code"]).toBe("stale_token");
    const missing = await run("claims", "get", "nope");
    expect(missing.code).toBe(1);
    expect(missing.err).toContain("claim_not_found");
  });

  it("runs the two-phase transfer", async () => {
    const { run } = cli();
    await run("claims", "acquire", "c", "--generation", "old");
    const prep = await run(
      "claims",
      "transfer",
      "prepare",
      "c",
      "--from",
      "old",
      "--to",
      "new",
      "--fencing-token",
      "1",
      "--json",
    );
    expect(json(prep.out).claim).toMatchObject({ phase: "reserved", pendingSuccessor: "new" });
    const args = ["claims", "transfer", "commit", "c", "--from", "old", "--to", "new", "--expected-token", "1"];
    const commit = await run(...args, "--operation-id", "op-1", "--json");
    expect(json(commit.out).claim).toMatchObject({ ownerGeneration: "new", fencingToken: "2" });
    // A retry with the same operation id replays the first answer.
    const again = await run(...args, "--operation-id", "op-1", "--json");
    expect(json(again.out).claim?.["fencingToken"]).toBe("2");
    const abort = await run(
      "claims",
      "transfer",
      "abort",
      "c",
      "--from",
      "old",
      "--to",
      "new",
      "--expected-token",
      "1",
    );
    expect(abort.code).toBe(1);
    expect(abort.err).toContain("no_transfer");
  });

  it("usage mistakes exit 2 and name the problem", async () => {
    const { run } = cli();
    expect((await run()).code).toBe(2);
    expect((await run("--help")).code).toBe(0);
    const unknown = await run("claims", "get", "c", "--bogus", "1");
    expect(unknown).toMatchObject({ code: 2 });
    expect(unknown.err).toContain("unknown option --bogus");
    const badToken = await run("claims", "renew", "c", "--generation", "g", "--fencing-token", "007");
    expect(badToken.code).toBe(2);
    expect(badToken.err).toContain("--fencing-token");
    expect((await run("claims", "acquire", "c")).err).toContain("--generation is required");
    expect((await run("nonsense", "x")).code).toBe(2);
  });

  it("a typo'd option is an error (exit 2, nothing sent), even where a value could be ignored", async () => {
    const { run, claims } = cli();
    const typo = await run("claims", "acquire", "c", "--generation", "g1", "--ttl-msx", "5000");
    expect(typo.code).toBe(2);
    expect(typo.err).toBe("shiftlock: unknown option --ttl-msx (did you mean --ttl-ms?) (see --help)\n");
    await expect(claims.getClaim("c")).rejects.toThrow(); // never acquired
    const asJson = await run("claims", "get", "c", "--jsn", "--json");
    expect(json(asJson.err).error).toEqual({ code: "usage", message: "unknown option --jsn (did you mean --json?)" });
    expect((await run("claims", "get", "c", "--frobnicate")).err).toBe(
      "shiftlock: unknown option --frobnicate (see --help)\n",
    );
    // A real option the command does not take is refused too, naming the command.
    const misplaced = await run("claims", "get", "c", "--generation", "g1");
    expect(misplaced.code).toBe(2);
    expect(misplaced.err).toContain("--generation is not an option of claims get");
    expect((await run("coord", "snapshot", "--volume", "v", "--store", "s", "--root", "{}")).err).toContain(
      "--root is not an option of coord snapshot",
    );
    expect((await run("claims", "acquire", "c", "--generation", "g", "--ttl-ms", "1.5")).err).toContain(
      '--ttl-ms must be an integer ≥ 0 (milliseconds), got "1.5"',
    );
    expect((await run("claims", "get", "-c")).err).toContain("unknown option -c");
  });

  it("reports invalid input the service rejects with its field", async () => {
    const { run } = cli();
    const res = await run("claims", "acquire", "c", "--generation", "g", "--ttl-ms", "5");
    expect(res.code).toBe(1);
    expect(res.err).toContain("invalid_request");
    expect(res.err).toContain("ttlMs");
  });
});

describe("shiftlock generations", () => {
  it("registers, reads and moves state; an illegal move is invalid_state", async () => {
    const { run } = cli();
    const reg = await run("generations", "register", "gen-1", "--service", "svc", "--instance", "i-1", "--json");
    expect(json(reg.out).generation).toMatchObject({ id: "gen-1", state: "joining" });
    expect((await run("generations", "set-state", "gen-1", "standby", "--reason", "ready")).code).toBe(0);
    expect(json((await run("generations", "get", "gen-1", "--json")).out).generation?.["state"]).toBe("standby");
    const illegal = await run("generations", "set-state", "gen-1", "draining");
    expect(illegal.code).toBe(1);
    expect(illegal.err).toContain("invalid_state");
    expect((await run("generations", "set-state", "gen-1", "sideways")).code).toBe(2);
  });

  it("keepalive --once keeps the lease once and prints the record; end-lease ends it", async () => {
    const { run } = cli();
    expect((await run("generations", "keepalive", "gen-1", "--once")).err).toContain("generation_not_found");
    await run("generations", "register", "gen-1", "--service", "svc", "--instance", "i-1");
    const kept = await run("generations", "keepalive", "gen-1", "--ttl", "30s", "--once", "--json");
    expect(kept.code).toBe(0);
    const record = json(kept.out).generation!;
    expect(record["leaseEpoch"]).toBe("1");
    expect(Number(record["leaseExpiresAtMs"])).toBeGreaterThan(Date.now());
    const ended = await run("generations", "end-lease", "gen-1", "--json");
    expect(json(ended.out).generation).toMatchObject({ leaseEpoch: "1", leaseExpiresAtMs: 0 });
    // --operation-id only goes with --once (one request); the loop sends many.
    expect((await run("generations", "keepalive", "gen-1", "--operation-id", "op-1")).code).toBe(2);
  });

  it("keepalive keeps the lease over the channel until interrupted, printing its deadline; a refusal exits 1", async () => {
    const stop = new AbortController();
    const claims = new MemoryClaimsBackend();
    let printed!: () => void;
    const firstLine = new Promise<void>((resolve) => (printed = resolve));
    const out: string[] = [];
    const io: CliIo = {
      stdout: (t) => {
        out.push(t);
        printed();
      },
      stderr: () => undefined,
      env: {},
      claims,
      signal: stop.signal,
    };
    await claims.registerGeneration({ id: "gen-1", service: "svc", instanceId: "i-1" });
    const keeping = main(["generations", "keepalive", "gen-1", "--ttl", "1m", "--json"], io);
    await firstLine;
    const held = await claims.getGeneration("gen-1");
    expect(held.leaseEpoch).toBe(1n);
    stop.abort();
    expect(await keeping).toBe(0);
    const first = JSON.parse(out[0]!) as Doc;
    expect(first.lease).toMatchObject({ generation: "gen-1", epoch: "1", via: "started" });
    // The local deadline it prints is never later than the one the service holds.
    expect(Number(first.lease?.["deadlineMs"])).toBeLessThanOrEqual(held.leaseExpiresAtMs);
    // Stopping ends nothing: the lease runs to its deadline.
    const after = await claims.getGeneration("gen-1");
    expect(after.leaseEpoch).toBe(1n);
    expect(after.leaseExpiresAtMs).toBeGreaterThanOrEqual(held.leaseExpiresAtMs);
    const missing = await cli().run("generations", "keepalive", "gen-x");
    expect(missing.code).toBe(1);
    expect(missing.err).toContain("generation_not_found");
  });
});

describe("shiftlock coord", () => {
  const scope = ["--volume", "vol", "--store", "store"];

  it("publishes under a lease and reads the snapshot and capability", async () => {
    const { run } = cli();
    const pub = await run("coord", "publish", ...scope, "--root", '{"v":1}', "--json");
    expect(pub.code).toBe(0);
    expect(json(pub.out).snapshot).toMatchObject({ generation: "1", root: { v: 1 } });
    expect(json((await run("coord", "snapshot", ...scope, "--json")).out).snapshot?.["generation"]).toBe("1");
    expect(json((await run("coord", "capability", ...scope, "--json")).out).capability?.["supported"]).toBe(true);
    const stale = await run("coord", "publish", ...scope, "--expected-generation", "7");
    expect(stale.code).toBe(1);
    expect(stale.err).toContain("stale_generation");
    expect(stale.err).toContain("the scope's current generation is 1");
  });

  it("a scope the command cannot use is a usage error, before any request", async () => {
    const { run } = cli({ fetch: () => Promise.reject(new Error("no request expected")) });
    const noStore = await run("coord", "snapshot", "--volume", "v");
    expect(noStore).toMatchObject({ code: 2, err: "shiftlock: coord snapshot needs --store (see --help)\n" });
    expect((await run("coord", "watch", "--volume", "v", "--store", "s", "--key", "k")).err).toContain(
      "coord watch does not take --key",
    );
    expect((await run("coord", "lease", "--volume", "v")).err).toContain("coord lease needs --store or --key");
  });

  it("holds a lease until interrupted, then releases it", async () => {
    const stop = new AbortController();
    const coordinator = new MemoryCoordinator();
    const { run } = cli({ signal: stop.signal, coordinator });
    const holding = run("coord", "lease", ...scope, "--json");
    await flushMicrotasks(50);
    // Busy while held: another participant is refused (it did not ask to wait).
    const busy = await cli({ coordinator }).run("coord", "lease", ...scope, "--participant", "p2");
    expect(busy.code).toBe(1);
    expect(busy.err).toContain("lease_held");
    expect(busy.err).toContain("held by participant shiftlock-cli");
    stop.abort();
    const res = await holding;
    expect(res.code).toBe(0);
    const lines = res.out
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as Doc);
    expect(lines[0]!.lease?.["epoch"]).toBe("1");
    expect(lines[1]).toMatchObject({ released: true });
  });
});

describe("shiftlock list commands", () => {
  it("claims list follows every page (a table under a header) and filters by prefix, phase and owner", async () => {
    const clock = new ManualClock(Date.parse("2030-01-01T00:00:00Z"));
    const { run } = cli({ claims: new MemoryClaimsBackend({ clock }) });
    for (const [name, gen] of [
      ["b", "g1"],
      ["a", "g2"],
      ["ab", "g1"],
    ]) {
      expect((await run("claims", "acquire", name!, "--generation", gen!, "--ttl", "1m")).code).toBe(0);
    }
    const prepare = ["claims", "transfer", "prepare", "b", "--from", "g1", "--to", "g3", "--fencing-token", "1"];
    expect((await run(...prepare, "--ttl", "1m")).code).toBe(0);
    const all = await run("claims", "list", "--limit", "1");
    expect(all.code).toBe(0);
    // The expiry and a reserved claim's successor are columns.
    expect(all.out).toBe(
      [
        "NAME  PHASE     OWNER  TOKEN  SUCCESSOR  EXPIRES",
        "a     owned     g2     1      -          2030-01-01T00:01:00.000Z",
        "ab    owned     g1     1      -          2030-01-01T00:01:00.000Z",
        "b     reserved  g1     1      g3         2030-01-01T00:01:00.000Z",
        "",
      ].join("\n"),
    );
    const mine = await run("claims", "list", "--owner", "g1", "--phase", "owned", "--prefix", "a", "--json");
    expect(
      mine.out
        .trim()
        .split("\n")
        .map((l) => (JSON.parse(l) as { claim: { name: string } }).claim.name),
    ).toEqual(["ab"]);
    const bad = await run("claims", "list", "--phase", "held");
    expect(bad.code).toBe(2);
    expect((await run("claims", "list", "--limit", "501")).code).toBe(2);
  });

  it("generations list and coord scopes", async () => {
    const { run } = cli();
    await run("generations", "register", "g2", "--service", "api", "--instance", "i");
    await run("generations", "register", "g1", "--service", "web", "--instance", "i");
    const gens = await run("generations", "list", "--service", "api");
    expect(gens.out).toBe("g2\tservice=api state=joining\n");
    expect((await run("coord", "publish", "--volume", "v", "--store", "s", "--root", "1")).code).toBe(0);
    const scopes = await run("coord", "scopes", "--json");
    expect(JSON.parse(scopes.out.trim())).toEqual({
      scope: expect.objectContaining({ volumeId: "v", objectStoreId: "s", key: "", generation: "1", held: false }),
    });
  });
});

describe("shiftlock against an HTTP server", () => {
  /** The CLI with the HTTP clients over `fetch` (no in-memory backends). */
  function http(fetch: CliIo["fetch"] & object) {
    const out: string[] = [];
    const err: string[] = [];
    const io: CliIo = { stdout: (t) => out.push(t), stderr: (t) => err.push(t), env: {}, fetch };
    return async (...argv: string[]) => {
      out.length = 0;
      err.length = 0;
      return { code: await main(argv, io), out: out.join(""), err: err.join("") };
    };
  }

  it("an unreachable server names the URL and exits 3; a failing one exits 5", async () => {
    const refused = Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:8999"), { code: "ECONNREFUSED" });
    const down = http(() => Promise.reject(new TypeError("fetch failed", { cause: refused })));
    const res = await down("claims", "get", "c", "--url", "http://127.0.0.1:8999");
    expect(res.code).toBe(3);
    expect(res.err).toContain("cannot reach http://127.0.0.1:8999 (connect ECONNREFUSED 127.0.0.1:8999)");
    const asJson = await down("claims", "get", "c", "--url", "http://127.0.0.1:8999", "--json");
    expect(asJson.code).toBe(3);
    expect(JSON.parse(asJson.err)).toEqual({
      error: {
        code: "unreachable",
        message: "cannot reach http://127.0.0.1:8999: connect ECONNREFUSED 127.0.0.1:8999",
        url: "http://127.0.0.1:8999",
      },
    });

    const body = JSON.stringify({ error: { code: "internal", message: "boom" } });
    const failing = http(() => Promise.resolve(new Response(body, { status: 500 })));
    const failed = await failing("claims", "get", "c");
    expect(failed.code).toBe(5);
    expect(failed.err).toContain("internal: the service failed");
  });

  it("a URL without http:// or https:// is a usage mistake (exit 2), from --url or SHIFTLOCK_URL, and nothing is sent", async () => {
    const sent: string[] = [];
    const out: string[] = [];
    const err: string[] = [];
    const io = (env: Record<string, string>): CliIo => ({
      stdout: (t) => out.push(t),
      stderr: (t) => err.push(t),
      env,
      fetch: (url) => {
        sent.push(url);
        return Promise.reject(new Error("nothing should be sent"));
      },
    });
    expect(await main(["claims", "get", "c", "--url", "localhost:8787"], io({}))).toBe(2);
    expect(err.join("")).toBe(
      'shiftlock: --url must be an http:// or https:// URL such as http://127.0.0.1:8787, got "localhost:8787" (did you mean http://localhost:8787?) (see --help)\n',
    );
    err.length = 0;
    expect(await main(["claims", "get", "c", "--json"], io({ SHIFTLOCK_URL: "localhost:8787" }))).toBe(2);
    expect(JSON.parse(err.join(""))).toMatchObject({
      error: {
        code: "usage",
        message: expect.stringMatching(/^SHIFTLOCK_URL must be an http:\/\/ or https:\/\/ URL/) as string,
      },
    });
    // --url wins over the environment, so a good flag is not spoiled by a bad variable.
    expect(await main(["claims", "get", "c", "--url", "http://127.0.0.1:8999"], io({ SHIFTLOCK_URL: "x" }))).toBe(3);
    expect(sent).toEqual(["http://127.0.0.1:8999/v1/ns/default/claims/c"]);
    expect(out).toEqual([]);
  });

  it("a wrong route names the URL", async () => {
    const body = JSON.stringify({ error: { code: "not_found", message: "no such route" } });
    const other = http(() => Promise.resolve(new Response(body, { status: 404 })));
    const res = await other("claims", "get", "c", "--url", "http://127.0.0.1:8999/elsewhere");
    expect(res.code).toBe(1);
    expect(res.err).toContain("no such route at http://127.0.0.1:8999/elsewhere");
  });
});

describe("operators: evict and whoami", () => {
  it("claims evict prints the unowned record; the evicted token is then refused with `evicted` (exit 1)", async () => {
    const { run } = cli();
    await run("claims", "acquire", "job", "--generation", "g1");
    const evicted = await run("claims", "evict", "job", "--note", "stuck since 04:00", "--json");
    expect(evicted.code).toBe(0);
    expect(json(evicted.out).claim).toMatchObject({ phase: "unowned", previousOwner: "g1", reason: "evicted" });
    const renew = await run("claims", "renew", "job", "--generation", "g1", "--fencing-token", "1", "--ttl", "1m");
    expect(renew.code).toBe(1);
    expect(renew.err).toContain("evicted: an operator evicted the owner this token belonged to");
    expect(renew.err).toContain("owner  token 1 phase unowned");
    const missing = await run("claims", "evict", "nope");
    expect(missing.code).toBe(1);
    expect(missing.err).toContain("claim_not_found");
    expect((await run("claims", "evict")).err).toContain("claim name is required");
    expect((await run("claims", "evict", "job", "--generation", "g1")).code).toBe(2);
  });

  it("claims watch shows an eviction's note", async () => {
    const stop = new AbortController();
    const { run, claims } = cli({ signal: stop.signal });
    await claims.acquireClaim({ claimName: "job", generationId: "g1", ttlMs: 60_000 });
    const watching = run("claims", "watch", "job");
    await flushMicrotasks(20);
    await claims.evictClaim({ claimName: "job", note: "INC-9" });
    await flushMicrotasks(20);
    stop.abort();
    const res = await watching;
    expect(res.code).toBe(0);
    expect(res.out).toMatch(/ evicted: .*\(note: "INC-9"\)\n$/);
  });

  it("coord evict ends the holder's lease and prints the snapshot; it needs --store or --key", async () => {
    const { run } = cli();
    const scope = ["--volume", "v", "--store", "s"];
    const held = await run("coord", "publish", ...scope, "--root", '{"v":1}');
    expect(held.code).toBe(0);
    const evicted = await run("coord", "evict", ...scope, "--note", "INC-9", "--json");
    expect(evicted.code).toBe(0);
    expect(json(evicted.out).snapshot).toEqual({ volumeId: "v", objectStoreId: "s", generation: "1", root: { v: 1 } });
    expect((await run("coord", "evict", "--volume", "v", "--key", "k")).code).toBe(0);
    expect((await run("coord", "evict", "--volume", "v")).err).toContain("coord evict needs --store or --key");
  });

  it("whoami prints the token's name and role (the in-memory backend stands for an admin)", async () => {
    const { run } = cli();
    const me = await run("whoami");
    expect(me).toMatchObject({ code: 0, err: "" });
    expect(me.out).toBe("memory (admin) in namespace default at http://127.0.0.1:8787\n");
    expect(JSON.parse((await run("whoami", "--json")).out)).toEqual({ name: "memory", role: "admin" });
    expect((await run("whoami", "extra")).code).toBe(2);
  });

  it("whoami over HTTP asks GET /v1/ns/{ns}/whoami with the token", async () => {
    const seen: string[] = [];
    const out: string[] = [];
    const io: CliIo = {
      stdout: (t) => out.push(t),
      stderr: () => undefined,
      env: { SHIFTLOCK_TOKEN: "dev-admin-token", SHIFTLOCK_NAMESPACE: "ops" },
      fetch: (input, init) => {
        seen.push(`${String(input)} ${new Headers(init?.headers).get("Authorization")}`);
        return Promise.resolve(Response.json({ name: "dev-admin", role: "admin" }));
      },
    };
    expect(await main(["whoami"], io)).toBe(0);
    expect(seen).toEqual(["http://127.0.0.1:8787/v1/ns/ops/whoami Bearer dev-admin-token"]);
    expect(out.join("")).toBe("dev-admin (admin) in namespace ops at http://127.0.0.1:8787\n");
  });
});
