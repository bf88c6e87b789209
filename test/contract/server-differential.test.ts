// Model-based differential fuzzing: random command sequences
// (differential-commands.ts) — claim mutations and reads with reused operation ids, batches,
// generation registration and state moves, coord lease tries, publishes with and without
// `expectedGeneration`, refreshes, releases, snapshots — run on the in-memory backends and
// on the real server (`npm start`, through the HTTP client), and every step's outcome must
// be the same on both: statuses (resolved or the error code), error details, records,
// tokens, versions, epochs and generations, all but times. Each sequence gets a fresh
// namespace on the server and fresh in-memory backends.
//
// Not covered: expiry (every ttl is an hour; the memory clock moves 1 ms per step), coord keepalive
// (the client's WriteLease sends it on its own timer, ttl/3, and exposes no call), waiting
// acquires and watches.
//
// FUZZ_RUNS sequences (default 30), FUZZ_SEED to replay (FUZZ_PATH for the shrunk case); the
// seed is in fast-check's failure report. See docs/fuzzing.md.
import fc from "fast-check";
import { afterAll, inject, it } from "vitest";
import WebSocket from "ws";
import { HttpClaimsBackend } from "../../src/client/claims/http-claims-backend.ts";
import { MemoryClaimsBackend } from "../../src/client/claims/memory-claims-backend.ts";
import { HttpCoordinator } from "../../src/client/coord/coord-http.ts";
import { MemoryCoordinator } from "../../src/client/coord/memory-coord.ts";
import { ManualClock } from "../../src/core/clock.ts";
import { fastCheckParameters, fuzzSettings } from "../fuzz/fuzz-settings.ts";
import type { Model, Real, Side } from "./differential-commands.ts";
import { COMMANDS, STATS } from "./differential-commands.ts";

const settings = fuzzSettings(process.env, 30);
const TOKEN = "dev-token";

afterAll(() => {
  const outcomes = [...STATS.outcomes].map(([kind, n]) => `${kind} ${n}`).join(", ");
  console.warn(`differential: seed ${settings.seed}, ${STATS.steps} steps compared (${outcomes})`);
});

function sides(): { memory: Side; server: Side; clock: ManualClock; close: () => Promise<void> } {
  const clock = new ManualClock(1_700_000_000_000);
  const memoryCoord = new MemoryCoordinator({ clock });
  const memory: Side = { claims: new MemoryClaimsBackend({ clock }), coord: memoryCoord, leases: [] };
  const options = { baseUrl: inject("serverUrl"), token: TOKEN, namespace: `diff-${crypto.randomUUID()}`, WebSocket };
  const server: Side = { claims: new HttpClaimsBackend(options), coord: new HttpCoordinator(options), leases: [] };
  return {
    memory,
    server,
    clock,
    close: async () => {
      for (const side of [memory, server]) {
        await Promise.all(side.leases.map((lease) => lease.release().catch(() => undefined)));
        await side.claims.close();
      }
      memoryCoord.close();
    },
  };
}

it(
  `memory and server agree on ${settings.runs} random command sequences`,
  { timeout: 120_000 + settings.runs * 10_000 },
  async () => {
    await fc.assert(
      fc.asyncProperty(fc.commands(COMMANDS, { maxCommands: 40, size: "max" }), async (commands) => {
        const { memory, server, clock, close } = sides();
        const real: Real = { memory, server, clock, tokens: new Map(), generations: new Map(), log: [] };
        try {
          await fc.asyncModelRun((): { model: Model; real: Real } => ({ model: {}, real }), commands);
        } finally {
          await close();
        }
      }),
      fastCheckParameters(settings, settings.runs),
    );
  },
);
