/**
 * The programs test/e2e/package.test.ts runs in projects that installed the packed tarball,
 * as a user would write them (plain JavaScript, or TypeScript for the type check).
 */

/**
 * The claim cycle the Node programs run, as statements: watch, acquire, release, read events
 * until `released`; leaves `snapshot`, `held` and `events` for the program to print.
 */
const CLAIM_CYCLE = `
const [baseUrl, namespace, claimName] = process.argv.slice(2);
const claims = new HttpClaimsBackend({ baseUrl, token: "dev-token", namespace, WebSocket });
const watch = claims.watchClaim(claimName);
const items = watch[Symbol.asyncIterator]();
const snapshot = (await items.next()).value;
const held = await claims.acquireClaim({ claimName, generationId: "node-consumer", ttlMs: 30000 });
await claims.releaseClaim({ claimName, generationId: "node-consumer", token: held.fencingToken });
const events = [];
while (!events.includes("released")) {
  const next = await items.next();
  if (next.done) break;
  if (next.value.type === "event") events.push(next.value.reason);
}
watch.close();
await claims.close();
`;

export const NODE_PROGRAM = `
import WebSocket from "ws";
import { HttpClaimsBackend } from "shiftlock/client";
${CLAIM_CYCLE}
console.log(JSON.stringify({ snapshot: snapshot.type, fencingToken: String(held.fencingToken), events }));
`;

export const TESTING_PROGRAM = `
import WebSocket from "ws";
import { HttpClaimsBackend, ShiftlockError } from "shiftlock/client";
import { startShiftlock } from "shiftlock/testing";

/** Watch, acquire and release one claim; the events seen and the fencing token. */
async function cycle(baseUrl, token) {
  const claims = new HttpClaimsBackend({ baseUrl, token, namespace: "app-tests", WebSocket });
  const watch = claims.watchClaim("leader");
  const items = watch[Symbol.asyncIterator]();
  const seen = [(await items.next()).value.type];
  const held = await claims.acquireClaim({ claimName: "leader", generationId: "app", ttlMs: 30000 });
  await claims.releaseClaim({ claimName: "leader", generationId: "app", token: held.fencingToken });
  while (!seen.includes("released")) seen.push((await items.next()).value.reason);
  watch.close();
  await claims.close();
  return { fencingToken: String(held.fencingToken), seen };
}

// Two servers at once: the local tokens by default, or exactly the ones given; each its own state.
const [local, custom] = await Promise.all([
  startShiftlock(),
  startShiftlock({ authTokens: [{ token: "app-test-token", role: "write", namespaces: ["app-tests"] }] }),
]);
try {
  const health = await (await local.fetch("/healthz")).json();
  // The pages are part of the Worker's bundle, so the packaged Worker serves them too.
  const dashboard = await local.fetch("/ui");
  const page = { status: dashboard.status, type: dashboard.headers.get("content-type"), html: (await dashboard.text()).includes("<html") };
  const first = await cycle(local.url, "dev-token");
  const again = await cycle(local.url, "dev-token");
  const refused = await cycle(custom.url, "dev-token").catch((err) => err instanceof ShiftlockError && err.code);
  const fresh = await cycle(custom.url, "app-test-token");
  console.log(JSON.stringify({ health, page, first, again, refused, fresh }));
} finally {
  await Promise.all([local.dispose(), custom.dispose()]);
}
`;

/** One fenced write and one refusal through `shiftlock/fence`, as a plain Node program. */
export const FENCE_PROGRAM = `
import { FenceRejected, MemoryFence, claimFenceKey } from "shiftlock/fence";

const fence = new MemoryFence();
const key = claimFenceKey("prod", "ledger");
const ledger = [];
fence.guard(key, 2n, () => ledger.push("owner 2"));
let refused;
try {
  fence.guard(key, "1", () => ledger.push("stale owner 1"));
} catch (err) {
  refused = err instanceof FenceRejected ? err.toJSON().error : err;
}
console.log(JSON.stringify({ ledger, refused }));
`;

export const TS_PROGRAM = `
import { GenerationSession, MemoryClaimsBackend, ShiftlockError, hasCode, type ClaimRecord } from "shiftlock/client";
import { FenceRejected, Fence, MemoryFence, fencedBatch, fencedPut, postgresFenced, sqliteFenced, type FenceCredential } from "shiftlock/fence";

const backend = new MemoryClaimsBackend();
const record: ClaimRecord = await backend.acquireClaim({ claimName: "a", generationId: "g", ttlMs: 1000 });
const token: bigint = record.fencingToken;
// @ts-expect-error a fencing token is a bigint, not a string: the types are real, not any
const wrong: string = record.fencingToken;
const session: Promise<GenerationSession> = GenerationSession.open({ service: "s", instanceId: "i", backend });
const err: unknown = new ShiftlockError("claim_held", "held");
if (hasCode(err, "claim_held")) console.log(err.code, token, wrong, session);
const lease = await (await session).claim("a").tryAcquire();
const credential: FenceCredential = lease.fence;
const written: number = new MemoryFence().guard(credential.key, credential.token, () => 1);
// @ts-expect-error a fence token is a bigint or a decimal string, not a number
new MemoryFence().guard(credential.key, 1, () => 1);
const refusal: FenceRejected | undefined = undefined;
console.log(written, refusal, Fence, fencedBatch, fencedPut, postgresFenced, sqliteFenced);
`;

/**
 * The claim cycle of NODE_PROGRAM as CommonJS (`app.js` of a project made by `npm init -y`):
 * every entry through `require()`, which Node ≥ 20.19 does for ES modules without a flag.
 */
export const COMMONJS_PROGRAM = `
const WebSocket = require("ws");
const { HttpClaimsBackend } = require("shiftlock/client");
const { MemoryFence } = require("shiftlock/fence");
const { startShiftlock } = require("shiftlock/testing");

async function main() {
${CLAIM_CYCLE}
  const entries = [typeof MemoryFence, typeof startShiftlock];
  console.log(JSON.stringify({ snapshot: snapshot.type, fencingToken: String(held.fencingToken), events, entries }));
}
main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
`;
