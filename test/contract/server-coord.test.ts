// The coord conformance suite against the real server (`npm start`, e2e global setup),
// through HttpCoordinator over HTTP and `ws` WebSockets. Each fixture uses a fresh
// namespace; time-dependent checks really wait.
import { inject } from "vitest";
import WebSocket from "ws";
import { HttpCoordinator } from "../../src/client/coord/coord-http.ts";
import { checkScope, scopeParams, scopeRoutes } from "../../src/client/coord/coord-scope.ts";
import { fillPath } from "../../src/protocol/route.ts";
import { runCoordConformance, type CoordFixture } from "./coord-suite.ts";

interface ServerFixture extends CoordFixture {
  baseUrl: string;
  namespace: string;
}

const TOKEN = "dev-token";

runCoordConformance<ServerFixture>(
  "server",
  () => {
    const baseUrl = inject("serverUrl");
    const namespace = `coord-${crypto.randomUUID()}`;
    const make = (token = TOKEN): HttpCoordinator =>
      new HttpCoordinator({
        baseUrl,
        token,
        namespace,
        WebSocket,
      });
    return { baseUrl, namespace, first: make(), second: make(), operator: make("dev-admin-token") };
  },
  {
    elapse: (_f, ms) => new Promise((resolve) => setTimeout(resolve, ms)),
    // Another client deleting the lease id: the holder's next keepalive is refused (410).
    revoke: async (f, scope, leaseId) => {
      const checked = checkScope(scope);
      const path = fillPath(scopeRoutes(checked).release.path, { ...scopeParams(checked), ns: f.namespace, leaseId });
      const res = await fetch(`${f.baseUrl}${path}`, {
        method: "DELETE",
        headers: { Authorization: `Bearer ${TOKEN}` },
      });
      if (res.status !== 204) throw new Error(`revoke: HTTP ${res.status}`);
    },
    shortTtlMs: 1_500,
    guardMs: 10_000,
  },
);
