/**
 * The claims contract against the in-memory backend, on a manual clock.
 */
import { MemoryClaimsBackend, forceSetToken } from "../../src/client/claims/memory-claims-backend.ts";
import { ManualClock } from "../../src/core/clock.ts";
import { runClaimsContract } from "./claims-suite.ts";

runClaimsContract(
  "MemoryClaimsBackend",
  () => {
    const clock = new ManualClock(1_700_000_000_000);
    const backend = new MemoryClaimsBackend({ clock });
    return Promise.resolve({
      backend,
      operator: backend,
      passTime: (ms) => clock.advance(ms),
      forceSetToken: (name, token) => forceSetToken(backend, name, token),
    });
  },
  { seedsTokens: true },
);
