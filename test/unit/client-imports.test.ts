/**
 * The client package entry must stay free of server code (SPEC §5): walk every module
 * reachable from `src/client/index.ts` and refuse `cloudflare:*` imports, the router and
 * anything that touches Durable Object APIs. Only pure, shared modules may be reached.
 */
import { readFileSync } from "node:fs";
import { dirname, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";

const ROOT = resolve(import.meta.dirname, "../..");
const IMPORT = /^\s*(?:import|export)\s[^;]*?from\s+["']([^"']+)["']/gm;
const SERVER_API = /\b(?:DurableObjectState|DurableObjectNamespace|ctx\.storage|WebSocketPair|acceptWebSocket)\b/;

function reachable(entry: string): Map<string, string[]> {
  const seen = new Map<string, string[]>();
  const queue = [entry];
  while (queue.length > 0) {
    const file = queue.pop()!;
    if (seen.has(file)) continue;
    const source = readFileSync(file, "utf8");
    const specifiers = [...source.matchAll(IMPORT)].map((m) => m[1]!);
    seen.set(file, specifiers);
    for (const s of specifiers) if (s.startsWith(".")) queue.push(resolve(dirname(file), s));
  }
  return seen;
}

describe("client package entry", () => {
  const graph = reachable(resolve(ROOT, "src/client/index.ts"));

  it("reaches only client, protocol and pure shared modules", () => {
    const files = [...graph.keys()].map((f) => relative(ROOT, f));
    expect(files.filter((f) => f.startsWith("src/http/") || f === "src/index.ts")).toEqual([]);
    for (const file of graph.keys()) {
      expect(SERVER_API.test(readFileSync(file, "utf8")), `${relative(ROOT, file)} uses a server API`).toBe(false);
    }
  });

  it("reaches only src/client, the protocol declarations and the pure machines", () => {
    const files = [...graph.keys()].map((f) => relative(ROOT, f));
    const outside = files.filter((f) => !/^src\/(client|protocol|core)\//.test(f));
    expect(outside).toEqual([]);
  });

  it("imports no platform module (cloudflare:*) and only runtime-neutral packages", () => {
    const bare = new Set([...graph.values()].flat().filter((s) => !s.startsWith(".")));
    expect([...bare].filter((s) => s.startsWith("cloudflare:") || s.startsWith("node:"))).toEqual([]);
    expect([...bare].filter((s) => s !== "zod")).toEqual([]);
  });
});
