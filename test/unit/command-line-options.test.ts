// The one command-line rule (src/cli/options.mjs) and every entry that uses it: the
// `shiftlock` CLI, the benchmark scripts and the demo. A typo'd option is an error
// everywhere, with a message naming it; the scripts exit 2 before doing anything.
import { execFile } from "node:child_process";
import { describe, expect, it, vi } from "vitest";
import {
  FSYNC_TRACE_USAGE,
  parseBenchArgs,
  parseDirectServerArgs,
  parseFsyncTraceArgs,
  parsePeersArgs,
  parseProfileArgs,
  parseSoakArgs,
  PHASES,
} from "../../bench/options.mjs";
import { parseDemoArgs } from "../../demo/options.ts";
import { parseCommandLine } from "../../src/cli/args.ts";
import {
  parseChoice,
  parseDecimal,
  parseDuration,
  parseHttpUrl,
  parseInteger,
  parseOptions,
  parseOrExit,
  USAGE_EXIT_STATUS,
  UsageError,
} from "../../src/cli/options.mjs";

/** The UsageError message `fn` throws (fails the test if it throws anything else or nothing). */
function usageError(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(UsageError);
    return (err as UsageError).message;
  }
  throw new Error("expected a UsageError");
}

describe("parseOptions (the shared rule)", () => {
  const table = {
    "ttl-ms": { type: "string" },
    json: { type: "boolean" },
    help: { type: "boolean", short: "h" },
  } as const;

  it("accepts --name value, --name=value, switches and short aliases", () => {
    expect(parseOptions(["--ttl-ms", "5", "--json", "-h"], table).values).toEqual({
      "ttl-ms": "5",
      json: true,
      help: true,
    });
    expect(parseOptions(["--ttl-ms=-1"], table).values).toEqual({ "ttl-ms": "-1" });
  });

  it("names the option in every refusal", () => {
    expect(usageError(() => parseOptions(["--ttl-msx", "5"], table))).toBe(
      "unknown option --ttl-msx (did you mean --ttl-ms?)",
    );
    expect(usageError(() => parseOptions(["--jsno"], table))).toBe("unknown option --jsno (did you mean --json?)");
    expect(usageError(() => parseOptions(["--verbose"], table))).toBe("unknown option --verbose"); // nothing near
    expect(usageError(() => parseOptions(["-x"], table))).toBe("unknown option -x");
    expect(usageError(() => parseOptions(["--ttl-ms"], table))).toBe("--ttl-ms needs a value");
    expect(usageError(() => parseOptions(["--json=yes"], table))).toBe("--json takes no value");
    expect(usageError(() => parseOptions(["--ttl-ms", "-5"], table))).toContain("write --ttl-ms=-5");
    expect(usageError(() => parseOptions(["extra"], table))).toBe('unexpected argument "extra"');
  });

  it("allows positionals only when asked, and `--` ends the options", () => {
    expect(parseOptions(["a", "--", "--json"], table, { allowPositionals: true })).toEqual({
      values: {},
      positionals: ["a", "--json"],
    });
  });

  it("parses integers, decimals and choices with one message shape", () => {
    expect(parseInteger("--ttl-ms", undefined)).toBeUndefined();
    expect(parseInteger("--ttl-ms", "15000", { unit: "milliseconds" })).toBe(15_000);
    for (const bad of ["1.5", "-1", "1e3", " 1", "", "0x10", "9007199254740993"]) {
      expect(usageError(() => parseInteger("--ttl-ms", bad))).toMatch(/^--ttl-ms must be an integer ≥ 0/);
    }
    expect(usageError(() => parseInteger("--count", "0", { min: 1 }))).toBe('--count must be an integer ≥ 1, got "0"');
    expect(usageError(() => parseInteger("--ttl-ms", "x", { unit: "milliseconds" }))).toBe(
      '--ttl-ms must be an integer ≥ 0 (milliseconds), got "x"',
    );
    expect(parseDuration("--ttl", undefined)).toBeUndefined();
    for (const [text, ms] of [
      ["500ms", 500],
      ["15s", 15_000],
      ["2m", 120_000],
      ["1h", 3_600_000],
      ["1m30s", 90_000],
      ["1.1s", 1_100],
    ] as const) {
      expect(parseDuration("--ttl", text)).toBe(ms);
    }
    expect(usageError(() => parseDuration("--ttl", "15"))).toBe("--ttl needs a unit (ms, s, m or h), e.g. 15s; got 15");
    for (const bad of ["", "s", "15 s", "15sec", "-1s", "0.5ms", "1h2"]) {
      expect(usageError(() => parseDuration("--ttl", bad))).toMatch(/^--ttl must be a duration such as 500ms, 15s/);
    }
    expect(parseDecimal("--duration", "0.5")).toBe(0.5);
    expect(usageError(() => parseDecimal("--duration", "5s"))).toMatch(/^--duration must be a number/);
    expect(parseChoice("--server", "miniflare", ["wrangler-dev", "miniflare"])).toBe("miniflare");
    expect(usageError(() => parseChoice("--server", "wrangler", ["wrangler-dev", "miniflare"]))).toBe(
      '--server must be one of wrangler-dev, miniflare, got "wrangler"',
    );
  });

  it("takes a server URL only with http:// or https://, and suggests the scheme for host:port", () => {
    expect(parseHttpUrl("--url", undefined)).toBeUndefined();
    for (const good of ["http://127.0.0.1:8787", "https://locks.example.com/", "http://[::1]:8787"]) {
      expect(parseHttpUrl("--url", good)).toBe(good);
    }
    expect(usageError(() => parseHttpUrl("--url", "localhost:8787"))).toBe(
      '--url must be an http:// or https:// URL such as http://127.0.0.1:8787, got "localhost:8787" (did you mean http://localhost:8787?)',
    );
    expect(usageError(() => parseHttpUrl("SHIFTLOCK_URL", "127.0.0.1:8787"))).toMatch(
      /^SHIFTLOCK_URL must be .* \(did you mean http:\/\/127\.0\.0\.1:8787\?\)$/,
    );
    for (const bad of ["", "ws://127.0.0.1:8787", "file:///tmp/x", "http://", "locks.example.com"]) {
      expect(usageError(() => parseHttpUrl("--url", bad))).toMatch(/^--url must be an http:\/\/ or https:\/\/ URL/);
    }
  });

  it("parseOrExit prints the mistake and the usage and exits 2, or the usage and exits 0 for --help", () => {
    const written: string[] = [];
    // Stand-ins that record instead of leaving the test process.
    const exit = vi.spyOn(process, "exit").mockImplementation((code) => {
      throw new Error(`exit ${String(code)}`);
    });
    const record = (text: string | Uint8Array): boolean => written.push(String(text)) > 0;
    const stderr = vi.spyOn(process.stderr, "write").mockImplementation(record);
    const stdout = vi.spyOn(process.stdout, "write").mockImplementation(record);
    try {
      const run = (argv: string[]) => () =>
        parseOrExit("fsync-trace", FSYNC_TRACE_USAGE, () => parseFsyncTraceArgs(argv));
      expect(run(["--cout=5"])).toThrow(`exit ${USAGE_EXIT_STATUS}`);
      expect(run(["--help"])).toThrow("exit 0");
      expect(run(["--count=5"])()).toEqual({ help: false, server: "npm-start", count: 5 });
    } finally {
      exit.mockRestore();
      stderr.mockRestore();
      stdout.mockRestore();
    }
    expect(written[0]).toMatch(
      /^fsync-trace: unknown option --cout \(did you mean --count\?\)\n\nusage: node bench\/fsync-trace.mjs/,
    );
    expect(written[1]).toBe(FSYNC_TRACE_USAGE);
  });
});

describe("shiftlock CLI options", () => {
  it("rejects a typo'd option before any command runs", () => {
    expect(usageError(() => parseCommandLine(["claims", "acquire", "c", "--generaton", "g"]))).toBe(
      "unknown option --generaton (did you mean --generation?)",
    );
    expect(usageError(() => parseCommandLine(["claims", "get", "c", "--json=1"]))).toBe("--json takes no value");
  });

  it("keeps every documented form: --flag value, --flag=value, -h, -- for odd names", () => {
    const parsed = parseCommandLine([
      "claims",
      "acquire",
      "c",
      "--generation=g",
      "--ttl-ms",
      "500",
      "--allow-empty-only",
    ]);
    expect(parsed).toEqual({
      words: ["claims", "acquire", "c"],
      values: { generation: "g", "ttl-ms": "500", "allow-empty-only": true },
    });
    expect(parseCommandLine(["-h"]).values.help).toBe(true);
    expect(parseCommandLine(["claims", "get", "--", "-odd"]).words).toEqual(["claims", "get", "-odd"]);
  });
});

describe("bench options", () => {
  it("defaults to the whole run against npm start", () => {
    expect(parseBenchArgs([])).toEqual({
      help: false,
      durationMs: 10_000,
      phases: new Set(PHASES),
      maxWatchers: 1000,
      server: "npm-start",
      tag: "latest",
      writeDoc: false,
      rttMs: undefined,
    });
  });

  it("keeps every documented command line", () => {
    const subset = parseBenchArgs(["--phases=claims,coord", "--duration=5", "--max-watchers=100"]);
    expect(subset).toMatchObject({ durationMs: 5_000, phases: new Set(["claims", "coord"]), maxWatchers: 100 });
    expect(parseBenchArgs(["--server=direct", "--write-doc"])).toMatchObject({
      server: "direct",
      tag: "direct",
      writeDoc: true,
    });
    expect(parseBenchArgs(["--tag=tmpfs", "--duration", "0.5"])).toMatchObject({ tag: "tmpfs", durationMs: 500 });
    expect(parseBenchArgs(["--rtt-ms=50"]).rttMs).toBe(50);
    expect(parsePeersArgs(["--rtt-ms", "50"]).rttMs).toBe(50);
  });

  it("rejects typos, unknown phases and servers, and malformed numbers", () => {
    expect(usageError(() => parseBenchArgs(["--duraton=5"]))).toBe(
      "unknown option --duraton (did you mean --duration?)",
    );
    expect(usageError(() => parseBenchArgs(["--write-doc=true"]))).toBe("--write-doc takes no value");
    expect(usageError(() => parseBenchArgs(["--phases=claims,cord"]))).toMatch(/^--phases must be one of healthz,/);
    expect(usageError(() => parseBenchArgs(["--server=wrangler"]))).toMatch(/^--server must be one of/);
    expect(usageError(() => parseBenchArgs(["--duration=ten"]))).toMatch(/^--duration must be a number/);
    expect(usageError(() => parseBenchArgs(["--max-watchers=1k"]))).toMatch(/^--max-watchers must be an integer/);
    expect(usageError(() => parseBenchArgs(["--tag=../x"]))).toMatch(/^--tag must be/);
    expect(usageError(() => parseBenchArgs(["claims"]))).toBe('unexpected argument "claims"');
  });

  it("fsync-trace, peers, soak and the direct server use the same rule", () => {
    expect(parseFsyncTraceArgs([])).toEqual({ help: false, server: "npm-start", count: 100 });
    expect(parseFsyncTraceArgs(["--server=direct", "--count=5"])).toMatchObject({ server: "direct", count: 5 });
    expect(usageError(() => parseFsyncTraceArgs(["--count=0"]))).toMatch(/^--count must be an integer ≥ 1/);
    expect(usageError(() => parseFsyncTraceArgs(["--sever=direct"]))).toBe(
      "unknown option --sever (did you mean --server?)",
    );
    expect(parsePeersArgs([])).toEqual({
      help: false,
      durationMs: 10_000,
      server: "npm-start",
      tag: "peers",
      writeDoc: false,
      rttMs: undefined,
    });
    expect(usageError(() => parsePeersArgs(["--server=miniflare"]))).toMatch(/^--server must be one of npm-start/);
    expect(parseSoakArgs(["--duration-s=60", "--watchers", "10"])).toMatchObject({
      durationMs: 60_000,
      sampleMs: 10_000,
      watchers: 10,
    });
    expect(usageError(() => parseSoakArgs(["--duration-s=5"]))).toMatch(
      /^--duration-s must be an integer from 10 to 86400/,
    );
    expect(parseDirectServerArgs(["--persist-to", "state", "--bundle=dist"])).toEqual({
      help: false,
      persistTo: "state",
      bundle: "dist",
      listingIndex: "on",
    });
    expect(parseDirectServerArgs(["--persist-to", "s", "--bundle=d", "--listing-index", "off"]).listingIndex).toBe(
      "off",
    );
    expect(usageError(() => parseDirectServerArgs(["--bundle=dist"]))).toBe("--persist-to is required");
    expect(usageError(() => parseDirectServerArgs(["--persist-to=s", "--bundle=d", "--listing-index=no"]))).toMatch(
      /^--listing-index must be one of on, off/,
    );
  });
});

describe("bench:profile options", () => {
  it("defaults to 10 s of both workloads with one client", () => {
    expect(parseProfileArgs([])).toEqual({
      help: false,
      durationMs: 10_000,
      workload: "both",
      watchers: 1000,
      clients: 1,
      samplingUs: 100,
      top: 5,
      tag: "profile",
    });
    expect(parseProfileArgs(["--workload=fanout", "--watchers=250"])).toMatchObject({
      workload: "fanout",
      watchers: 250,
    });
    expect(parseProfileArgs(["--duration=2.5", "--workload", "coord", "--clients=4", "--tag=after"])).toMatchObject({
      durationMs: 2_500,
      workload: "coord",
      clients: 4,
      tag: "after",
    });
  });

  it("rejects typos, unknown workloads and out-of-range numbers", () => {
    expect(usageError(() => parseProfileArgs(["--workload=locks"]))).toMatch(/^--workload must be one of/);
    expect(usageError(() => parseProfileArgs(["--sampling-us=1"]))).toMatch(/^--sampling-us must be an integer/);
    expect(usageError(() => parseProfileArgs(["--clients=0"]))).toMatch(/^--clients must be an integer/);
    expect(usageError(() => parseProfileArgs(["--watchers=0"]))).toMatch(/^--watchers must be an integer/);
    expect(usageError(() => parseProfileArgs(["--durration=5"]))).toBe(
      "unknown option --durration (did you mean --duration?)",
    );
  });
});

describe("demo options", () => {
  it("defaults to 4 claims and the usual server", () => {
    expect(parseDemoArgs([])).toEqual({
      help: false,
      claims: 4,
      url: undefined,
      rttMs: undefined,
      drain: "before-commit",
      bound: true,
    });
    expect(parseDemoArgs(["--claims", "8", "--url=http://127.0.0.1:8799"])).toEqual({
      help: false,
      claims: 8,
      url: "http://127.0.0.1:8799",
      rttMs: undefined,
      drain: "before-commit",
      bound: true,
    });
    expect(parseDemoArgs(["--drain", "before-prepare"]).drain).toBe("before-prepare");
    expect(parseDemoArgs(["--unbound"]).bound).toBe(false);
    expect(parseDemoArgs(["--rtt-ms", "50"]).rttMs).toBe(50);
  });

  it("rejects a typo'd option, a malformed count and a URL without a scheme", () => {
    expect(usageError(() => parseDemoArgs(["--claim", "8"]))).toBe("unknown option --claim (did you mean --claims?)");
    expect(usageError(() => parseDemoArgs(["--claims", "0"]))).toMatch(/^--claims must be an integer ≥ 1/);
    expect(usageError(() => parseDemoArgs(["--claims"]))).toBe("--claims needs a value");
    expect(usageError(() => parseDemoArgs(["--rtt-ms", "0"]))).toMatch(/^--rtt-ms must be a number from 1 to 1000/);
    expect(usageError(() => parseDemoArgs(["--url", "localhost:8787"]))).toMatch(
      /^--url must be an http:\/\/ or https:\/\/ URL/,
    );
  });
});

/** Run a script with plain node and return its exit status and stderr. */
function node(args: string[]): Promise<{ code: number; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, args, { timeout: 30_000 }, (err, _stdout, stderr) => {
      resolve({ code: err === null ? 0 : typeof err.code === "number" ? err.code : -1, stderr });
    });
  });
}

// The entries wire the parse in before doing anything: a typo exits 2 at once (no server
// is started, nothing is measured).
describe("entry points exit 2 on a typo before starting", { timeout: 60_000 }, () => {
  it.each([
    ["bench/run.mjs", ["bench/run.mjs", "--duraton=5"], "bench: unknown option --duraton"],
    [
      "bench/fsync-trace.mjs",
      ["bench/fsync-trace.mjs", "--cout=5"],
      "fsync-trace: unknown option --cout (did you mean --count?)",
    ],
    ["bench/profile.mjs", ["bench/profile.mjs", "--tpo=5"], "profile: unknown option --tpo (did you mean --top?)"],
    ["demo/run.ts", ["--import", "tsx", "demo/run.ts", "--claim", "3"], "demo: unknown option --claim"],
  ])("%s", async (_name, args, message) => {
    const res = await node(args);
    expect(res.code).toBe(USAGE_EXIT_STATUS);
    expect(res.stderr).toContain(message);
  });
});
