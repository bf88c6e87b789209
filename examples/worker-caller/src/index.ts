/**
 * worker-caller: a Worker that uses shiftlock through a service binding (`env.SHIFTLOCK`),
 * with the `shiftlock/client` package: its `fetch` is the binding's, and watches open
 * their WebSockets through the binding too (service-websocket.ts). No request leaves
 * Cloudflare's network and the shiftlock Worker need not be public.
 *
 * `POST /jobs/<claim>` runs one job under the claim: watch the claim, acquire it (refused
 * with 409 while someone else holds it), do the work with the fencing token, release it,
 * and answer with the token and the watch events seen (`acquired`, `released`).
 *
 * Guarantees: the claim is released before the answer, also when the work throws; the
 * watch and the client are closed before the answer. Does not renew the claim: work that
 * may outlast `ttlMs` should use the handoff runtime or renew every ttl/3.
 */
import { HttpClaimsBackend, hasCode, type ClaimWatchItem } from "shiftlock/client";
import { serviceWebSocket } from "./service-websocket.ts";

interface Env {
  /** Service binding to the shiftlock Worker (wrangler.toml `[[services]]`). */
  SHIFTLOCK: Fetcher;
  /** A shiftlock bearer token with write access to SHIFTLOCK_NAMESPACE (a secret). */
  SHIFTLOCK_TOKEN: string;
  SHIFTLOCK_NAMESPACE: string;
}

/** How long the claim is held at most if this Worker dies mid-job, ms. */
const TTL_MS = 30_000;

export default {
  async fetch(request, env): Promise<Response> {
    const match = /^\/jobs\/([^/]+)$/.exec(new URL(request.url).pathname);
    if (match?.[1] === undefined || request.method !== "POST") return new Response("not found", { status: 404 });
    const claimName = decodeURIComponent(match[1]);
    const claims = new HttpClaimsBackend({
      // Any origin: the binding ignores the host and reaches the shiftlock Worker.
      baseUrl: "https://shiftlock.internal",
      token: env.SHIFTLOCK_TOKEN,
      namespace: env.SHIFTLOCK_NAMESPACE,
      fetch: (input, init) => env.SHIFTLOCK.fetch(input, init),
      WebSocket: serviceWebSocket(env.SHIFTLOCK),
    });
    const watch = claims.watchClaim(claimName);
    const seen = watch[Symbol.asyncIterator]();
    try {
      // The first item is the snapshot: from here on every change arrives as an event.
      await nextItem(seen);
      let held;
      try {
        held = await claims.acquireClaim({ claimName, generationId: "worker-caller", ttlMs: TTL_MS });
      } catch (err) {
        if (hasCode(err, "claim_held")) return Response.json({ error: "claim_held" }, { status: 409 });
        throw err;
      }
      try {
        // The protected work goes here: send held.fencingToken with every write it makes.
      } finally {
        await claims.releaseClaim({ claimName, generationId: "worker-caller", token: held.fencingToken });
      }
      const events: string[] = [];
      while (!events.includes("released")) {
        const item = await nextItem(seen);
        if (item.type === "event") events.push(item.reason);
      }
      return Response.json({ claim: claimName, fencingToken: held.fencingToken.toString(), events });
    } finally {
      watch.close();
      await claims.close();
    }
  },
} satisfies ExportedHandler<Env>;

async function nextItem(items: AsyncIterator<ClaimWatchItem>): Promise<ClaimWatchItem> {
  const next = await items.next();
  if (next.done === true) throw new Error("the watch ended");
  return next.value;
}
