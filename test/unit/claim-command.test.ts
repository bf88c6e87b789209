import { describe, expect, expectTypeOf, it } from "vitest";
import type { z } from "zod";
import { commandOf, type ClaimCommand, type MutationCommand } from "../../src/core/claim-command.ts";
import type { AcquireRequest, CommitRequest } from "../../src/client/claims/claims-backend.ts";
import { CLAIM_MUTATIONS, claimRoutePath, type ClaimBodies } from "../../src/protocol/claim-routes.ts";

describe("claim requests and commands derive from the route declarations", () => {
  it("maps a decoded body to the machine's command, every field but operationId", () => {
    const body = CLAIM_MUTATIONS.commit.body.parse({
      fromGeneration: "g1",
      toGeneration: "g2",
      expectedToken: "7",
      ttlMs: 1000,
      operationId: "op-1",
    });
    expect(commandOf("commit", body)).toEqual({
      kind: "commit",
      fromGeneration: "g1",
      toGeneration: "g2",
      expectedToken: 7n,
      ttlMs: 1000,
    });
  });

  it("keeps the stored spelling of each mutation's path (operation-id fingerprints)", () => {
    expect(claimRoutePath("acquire")).toBe("acquire");
    expect(claimRoutePath("prepare")).toBe("transfer/prepare");
    expect(claimRoutePath("commit")).toBe("transfer/commit");
    expect(claimRoutePath("abort")).toBe("transfer/abort");
  });

  it("carries a body field to the command and the client's request (type level)", () => {
    // Every field of a route's body but operationId is a field of its command, with its type: a
    // field added to a body schema reaches the machine, and a hand-written command fails here.
    expectTypeOf<MutationCommand<"acquire">>().toEqualTypeOf<
      { kind: "acquire" } & Omit<z.output<typeof CLAIM_MUTATIONS.acquire.body>, "operationId">
    >();
    expectTypeOf<Omit<Extract<ClaimCommand, { kind: "renew" }>, "kind">>().toEqualTypeOf<
      Omit<ClaimBodies["renew"], "operationId">
    >();
    // The client's requests are the claim's name plus the route's body.
    expectTypeOf<AcquireRequest>().toEqualTypeOf<{ claimName: string } & ClaimBodies["acquire"]>();
    expectTypeOf<CommitRequest["expectedToken"]>().toEqualTypeOf<bigint>();
  });
});
