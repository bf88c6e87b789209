#!/usr/bin/env node
/**
 * Diagnostic: how many fsync calls (and on which files) each kind of request costs the local
 * Workers runtime. Starts a private server (the serving half of `npm start` by default, or
 * `--server=direct`; bench/server.mjs), attaches `strace` to its workerd process for 100
 * requests of each kind, and prints fsyncs per request grouped by file.
 *
 *   node bench/fsync-trace.mjs [--server=npm-start|direct] [--count=100] [--help]
 *
 * Needs `strace` (Debian: `apt-get install strace`) and permission to trace (root, or
 * ptrace_scope 0). Not part of `npm test` or `npm run bench`. It explains the cost of a
 * durable change on a given disk; it is not a speed figure (strace slows every syscall).
 */
import { spawn } from "node:child_process";
import { readFileSync, rmSync } from "node:fs";
import { makeClient, expectStatus } from "./http.mjs";
import { FSYNC_TRACE_USAGE, parseFsyncTraceArgs } from "./options.mjs";
import { groupPids, startServer } from "./server.mjs";
import { stopAll } from "./cleanup.mjs";
import { parseOrExit } from "../src/cli/options.mjs";

const { server: kind, count } = parseOrExit("fsync-trace", FSYNC_TRACE_USAGE, () =>
  parseFsyncTraceArgs(process.argv.slice(2)),
);

const server = await startServer(kind);
const client = await makeClient("dev-token");
const workerd = groupPids(server.pgid, "workerd").map(String);

/**
 * Trace `count` runs of `fn`; return fsyncs per run by file kind.
 * @param {() => Promise<unknown>} fn one request (or a few) of the kind measured
 * @returns {Promise<Record<string, number>>}
 */
async function traced(fn) {
  const out = `/tmp/shiftlock-fsync-${process.pid}.txt`;
  const strace = spawn(
    "strace",
    ["-f", "-y", "-e", "trace=fsync,fdatasync", "-o", out, ...workerd.flatMap((p) => ["-p", p])],
    {
      stdio: "ignore",
    },
  );
  await new Promise((r) => setTimeout(r, 1_000)); // attached
  for (let i = 0; i < count; i++) await fn();
  await new Promise((r) => setTimeout(r, 300));
  strace.kill("SIGINT");
  await new Promise((r) => strace.once("exit", r));
  /** @type {Record<string, number>} */
  const byFile = {};
  for (const line of readFileSync(out, "utf8").split("\n")) {
    const path = /f(?:data)?sync\(\d+<([^>]*)>/.exec(line)?.[1];
    if (path === undefined) continue;
    // Name files by role, not by hash: the object's own database or the shared metadata.
    const file = path
      .replace(/[0-9a-f]{64}/, "<object>")
      .replace(/^.*\/-?(\w+Object)(\/|$)/, "$1$2")
      .replace(/Object$/, "Object/ (directory)");
    byFile[file] = (byFile[file] ?? 0) + 1;
  }
  rmSync(out, { force: true });
  return Object.fromEntries(Object.entries(byFile).map(([f, n]) => [f, Math.round((n / count) * 100) / 100]));
}

const base = `${server.url}/v1/ns/fsync/claims`;
const scope = `${server.url}/v1/ns/fsync/volumes/v/stores/s`;
const acquire = { generationId: "g", ttlMs: 60_000, operationId: "op-1" };
const held = expectStatus(await client.call("POST", `${base}/held/acquire`, acquire), 200, "acquire");
const renew = { generationId: "g", token: held.claim.fencingToken, ttlMs: 60_000 };
const kinds = {
  "claims GET": async () => expectStatus(await client.call("GET", `${base}/held`), 200, "get"),
  "claims acquire replayed by operationId": async () =>
    expectStatus(await client.call("POST", `${base}/held/acquire`, acquire), 200, "replay"),
  "claims renew": async () => expectStatus(await client.call("POST", `${base}/held/renew`, renew), 200, "renew"),
  "claims acquire + release": async () => {
    const a = expectStatus(
      await client.call("POST", `${base}/cycle/acquire`, { generationId: "g", ttlMs: 60_000 }),
      200,
      "a",
    );
    const body = { generationId: "g", token: a.claim.fencingToken };
    expectStatus(await client.call("POST", `${base}/cycle/release`, body), 200, "release");
  },
  "coord lease + publish + release": async () => {
    const l = expectStatus(await client.call("POST", `${scope}/leases`, { participantId: "p" }), 201, "lease");
    const lease = `${scope}/leases/${encodeURIComponent(l.lease.leaseId)}`;
    expectStatus(await client.call("POST", `${lease}/publish`, { root: { x: 1 } }), 200, "publish");
    expectStatus(await client.call("DELETE", lease), 204, "release");
  },
};
console.log(`fsync calls per operation (${kind}, ${count} each, workerd pid ${workerd.join(",")}):`);
try {
  for (const [name, fn] of Object.entries(kinds)) {
    const perFile = await traced(fn);
    const total = Object.values(perFile).reduce((a, b) => a + b, 0);
    const detail = Object.entries(perFile).map(([f, n]) => `${f} ×${n}`);
    console.log(`  ${name}: ${Math.round(total * 100) / 100}${detail.length ? ` (${detail.join(", ")})` : ""}`);
  }
} finally {
  await client.close();
  await server.stop();
  await stopAll();
}
