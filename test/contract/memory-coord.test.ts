// The coord conformance suite against the in-memory coordinator, on a ManualClock: expiry,
// waiter timeouts and keepalives happen when the test advances time, never by sleeping.
import { ManualClock } from "../../src/core/clock.ts";
import { MemoryCoordinator } from "../../src/client/coord/memory-coord.ts";
import { runCoordConformance, type CoordFixture } from "./coord-suite.ts";

interface MemoryFixture extends CoordFixture {
  clock: ManualClock;
  coordinator: MemoryCoordinator;
}

runCoordConformance<MemoryFixture>(
  "in-memory",
  () => {
    const clock = new ManualClock();
    const coordinator = new MemoryCoordinator({ clock });
    return {
      clock,
      coordinator,
      first: coordinator,
      second: coordinator,
      operator: coordinator,
      close: () => coordinator.close(),
    };
  },
  {
    // Small steps so every keepalive, alarm and timeout runs at its own instant.
    elapse: async (f, ms) => {
      for (let left = ms; left > 0; left -= 10) await f.clock.advance(Math.min(10, left));
    },
    revoke: (f, scope, leaseId) => {
      f.coordinator.revokeLease(scope, leaseId);
      return Promise.resolve();
    },
    shortTtlMs: 1_000,
  },
);
