/**
 * The in-memory claims backend with one power the service never offers: setting a claim's
 * fencing token (e.g. to the maximum, to reach `token_overflow`). A subclass under test/,
 * so the published backend has no such door.
 */
import { MemoryClaimsBackend } from "../../src/client/claims/memory-claims-backend.ts";
import { emptyClaim } from "../../src/core/claim-machine.ts";
import { getClaim } from "../../src/protocol/claim-routes.ts";
import { checkPathParams } from "../../src/client/transport/route-codec.ts";

export class TokenSeedingBackend extends MemoryClaimsBackend {
  /** Set `claimName`'s fencing token, creating the claim unowned if needed (expiry applied first). */
  forceSetToken(claimName: string, token: bigint): void {
    checkPathParams(getClaim, { claim: claimName });
    const claim = this.claimNamed(claimName);
    claim.run({ kind: "expire" }, this.clock.nowMs());
    claim.record = { ...(claim.record ?? emptyClaim(claimName)), fencingToken: token };
  }
}
