/**
 * The claims contract against the real server (`npm start`), through `HttpClaimsBackend`:
 * each test gets a fresh random namespace, so tests never see each other's claims.
 */
import { inject } from "vitest";
import WebSocket from "ws";
import { HttpClaimsBackend } from "../../src/client/claims/http-claims-backend.ts";
import { runClaimsContract } from "./claims-suite.ts";

runClaimsContract(
  "HttpClaimsBackend against the server",
  () => {
    const namespace = `contract-${crypto.randomUUID()}`;
    const client = (token: string): HttpClaimsBackend =>
      new HttpClaimsBackend({ baseUrl: inject("serverUrl"), token, namespace, WebSocket });
    return Promise.resolve({
      backend: client("dev-token"),
      // The local server's admin token (docs/protocol.md#roles-names-and-whoami).
      operator: client("dev-admin-token"),
      // Real time must pass on the server: its alarm and lazy checks use its own clock.
      passTime: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
    });
  },
  // The server has no way to seed a token near 2^64 (by design); overflow is covered in memory
  // and by the machine's unit tests.
  { seedsTokens: false },
);
