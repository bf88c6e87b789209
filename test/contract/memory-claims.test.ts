/**
 * The claims contract against the in-memory backend, on a manual clock.
 */
import { ManualClock } from "../../src/core/clock.ts";
import { runClaimsContract } from "./claims-suite.ts";
import { TokenSeedingBackend } from "./token-seeding-backend.ts";

runClaimsContract(
  "MemoryClaimsBackend",
  () => {
    const clock = new ManualClock(1_700_000_000_000);
    const backend = new TokenSeedingBackend({ clock });
    return Promise.resolve({
      backend,
      operator: backend,
      passTime: (ms) => clock.advance(ms),
      forceSetToken: (name, token) => backend.forceSetToken(name, token),
    });
  },
  { seedsTokens: true },
);
