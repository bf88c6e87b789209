// How bench/profile.mjs reads a CPU profile: each busy sample in exactly one phase, natives
// counted where their JavaScript caller is, JSON wherever it is called, idle left out.
import { describe, expect, it } from "vitest";
import { phaseOfSource, summarizeProfile } from "../../bench/profile-phases.mjs";
import type { CpuProfile, Locate } from "../../bench/profile-phases.mjs";

const BUNDLE = "file:///bundle/index.js";

/** Frames of the fake bundle: line number → original source. */
const SOURCES: Record<number, string> = {
  1: "../src/http/auth.ts",
  2: "../node_modules/zod/v4/core/schemas.js",
  3: "../src/claims/store.ts",
  4: "../node_modules/hono/dist/hono-base.js",
};
const locate: Locate = (url, line) => {
  const source = url === BUNDLE ? SOURCES[line] : undefined;
  return source === undefined ? undefined : { source, line: line + 1 };
};

function frame(functionName: string, url = "", lineNumber = -1) {
  return { functionName, url, lineNumber, columnNumber: 0 };
}

// (root) → dispatch (hono) → authenticate (auth) → digest (native)
//                          → commit (store) → exec (native), parse (native JSON)
//        → (program), (idle), (garbage collector)
const profile: CpuProfile = {
  nodes: [
    { id: 1, callFrame: frame("(root)"), children: [2, 7, 8, 9] },
    { id: 2, callFrame: frame("dispatch", BUNDLE, 4), children: [3, 5] },
    { id: 3, callFrame: frame("authenticate", BUNDLE, 1), children: [4] },
    { id: 4, callFrame: frame("digest") },
    { id: 5, callFrame: frame("commit", BUNDLE, 3), children: [6, 10] },
    { id: 6, callFrame: frame("exec") },
    { id: 7, callFrame: frame("(program)") },
    { id: 8, callFrame: frame("(idle)") },
    { id: 9, callFrame: frame("(garbage collector)") },
    { id: 10, callFrame: frame("parse") },
  ],
  startTime: 0,
  endTime: 1000,
  samples: [4, 4, 6, 6, 6, 10, 2, 7, 8, 8, 9, 3],
  timeDeltas: [100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 100],
};

describe("summarizeProfile", () => {
  it("puts every busy sample in one phase and leaves idle out", () => {
    const s = summarizeProfile(profile, locate);
    expect(s.busy).toBe(10);
    expect(s.idle).toBe(2);
    expect(s.phases).toMatchObject({ auth: 3, "SQL/storage": 3, JSON: 1, "hono/mount": 1, runtime: 1, GC: 1 });
    expect(Object.values(s.phases).reduce((a, b) => a + b, 0)).toBe(s.busy);
  });

  it("names functions by their original source, natives by their caller's phase", () => {
    const s = summarizeProfile(profile, locate);
    expect(s.functions[0]).toEqual({ name: "exec", source: "native", phase: "SQL/storage", self: 3 });
    expect(s.functions).toContainEqual({ name: "digest", source: "native", phase: "auth", self: 2 });
    expect(s.functions).toContainEqual({ name: "authenticate", source: "src/http/auth.ts:2", phase: "auth", self: 1 });
    expect(s.functions).toContainEqual({ name: "JSON.parse", source: "native", phase: "JSON", self: 1 });
  });
});

describe("phaseOfSource", () => {
  it.each([
    ["../src/http/mount.ts", "hono/mount"],
    ["../src/protocol/zod-invalid.ts", "zod"],
    ["../src/http/claims.ts", "RPC"],
    ["../src/durable/migrations.ts", "SQL/storage"],
    ["../src/core/claim-machine.ts", "object logic"],
    ["../src/protocol/counter.ts", "other JS"],
  ])("%s is %s", (source, phase) => {
    expect(phaseOfSource(source)).toBe(phase);
  });
});
