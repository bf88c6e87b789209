/**
 * Resuming watchers, one per claim and one per scope, over plain WebSockets (`ws`), so the
 * history holds exactly what the server sent (the client library's de-duplication would
 * hide a server that repeats itself).
 *
 * Guarantees:
 * - Every connection, message and close is recorded (history.ts `watch` entries).
 * - A claim watcher resumes with `afterVersion` = the last version it received (a snapshot's
 *   or an event's); a scope watcher with `afterGeneration` = the last generation it received
 *   (`ready` or event). Both acknowledge every event (docs/protocol.md#watch-flow-control) and reconnect 100–300 ms after
 *   any close (500–1,000 ms after a connection that got nothing), until stopped.
 * - So that resuming is exercised beyond the server's crashes and pauses, a watcher also
 *   closes its connection itself after {@link CLOSE_AFTER_MESSAGES} messages, and one
 *   reconnect in {@link REWIND_EVERY} *rewinds*: it resumes from a point it used before
 *   (drawn from all of them, the first included), which is within the server's retained
 *   events (≥ 256: the missed events are replayed) or beyond them (a `truncated` snapshot,
 *   or a coord `replay` event). The `open` entry records the point sent, so the checker
 *   judges each connection from it.
 */
import WebSocket from "ws";
import { watchClaim } from "../../src/protocol/claim-routes.ts";
import { fillPath } from "../../src/protocol/route.ts";
import { SCOPE_ROUTE_FAMILIES } from "../../src/protocol/scope-routes.ts";
import type { HistoryWriter } from "./history.ts";
import type { Rng } from "./rng.ts";
import { TOKEN } from "./wire.ts";

export interface WatcherContext {
  namespace: string;
  baseUrl: () => string;
  history: HistoryWriter;
  rng: Rng;
  stopped: () => boolean;
}

interface Flavour {
  watcher: string;
  url: (after: string | undefined) => string;
  /** The resume point a message moves to, if any, and the ack to send for it. */
  receive: (msg: Record<string, unknown>) => { after?: string; ack?: unknown };
}

/** A watcher closes its own connection after this many messages (drawn per connection). */
export const CLOSE_AFTER_MESSAGES = { min: 20, max: 400 } as const;
/** One reconnect in this many resumes from an earlier point than the last one received. */
export const REWIND_EVERY = 4;

function wsUrl(base: string, path: string, query: string): string {
  return base.replace(/^http/, "ws") + path + query;
}

/** Watch claim `claim` until stopped. */
export function watchClaimForever(ctx: WatcherContext, claim: string): Promise<void> {
  return watchForever(ctx, {
    watcher: `claim:${claim}`,
    url: (after) =>
      wsUrl(
        ctx.baseUrl(),
        fillPath(watchClaim.path, { ns: ctx.namespace, claim }),
        after === undefined ? "" : `?afterVersion=${after}`,
      ),
    receive: (msg) => {
      if (msg["type"] === "snapshot") {
        const record = msg["claim"] as { version: string } | null;
        return { after: record?.version ?? "0" };
      }
      if (msg["type"] === "event") {
        const version = (msg["claim"] as { version: string }).version;
        return { after: version, ack: { type: "ack", version } };
      }
      return {};
    },
  });
}

/** Watch scope `volume/store` until stopped. */
export function watchScopeForever(ctx: WatcherContext, scope: string): Promise<void> {
  const [volumeId = "", objectStoreId = ""] = scope.split("/");
  return watchForever(ctx, {
    watcher: `scope:${scope}`,
    url: (after) =>
      wsUrl(
        ctx.baseUrl(),
        fillPath(SCOPE_ROUTE_FAMILIES.store.watch.path, { ns: ctx.namespace, volumeId, objectStoreId }),
        after === undefined ? "" : `?afterGeneration=${after}`,
      ),
    receive: (msg) => {
      if (msg["type"] === "ready") return { after: String(msg["generation"]) };
      if (msg["type"] === "event") return { after: String(msg["generation"]), ack: { type: "ack", count: 1 } };
      return {};
    },
  });
}

async function watchForever(ctx: WatcherContext, flavour: Flavour): Promise<void> {
  let after: string | undefined;
  /** Every resume point this watcher has sent, oldest first. */
  const points: string[] = [];
  let conn = 0;
  while (!ctx.stopped()) {
    conn++;
    if (after !== undefined && points.length > 1 && ctx.rng.chance(1 / REWIND_EVERY)) after = ctx.rng.pick(points);
    if (after !== undefined) points.push(after);
    const closeAfter = ctx.rng.int(CLOSE_AFTER_MESSAGES.min, CLOSE_AFTER_MESSAGES.max);
    ctx.history.write({
      t: "watch",
      watcher: flavour.watcher,
      conn,
      atMs: Date.now(),
      kind: "open",
      ...(after === undefined ? {} : { after }),
    });
    let received = 0;
    await new Promise<void>((resolve) => {
      const socket = new WebSocket(flavour.url(after), {
        headers: { authorization: `Bearer ${TOKEN}` },
        handshakeTimeout: 5_000,
      });
      const stopTimer = setInterval(() => {
        if (ctx.stopped()) socket.terminate();
      }, 200);
      socket.on("message", (data: Buffer) => {
        let msg: Record<string, unknown>;
        try {
          msg = JSON.parse(data.toString()) as Record<string, unknown>;
        } catch {
          return;
        }
        received++;
        ctx.history.write({ t: "watch", watcher: flavour.watcher, conn, atMs: Date.now(), kind: "message", msg });
        const step = flavour.receive(msg);
        if (step.after !== undefined) after = step.after;
        if (step.ack !== undefined && socket.readyState === WebSocket.OPEN) socket.send(JSON.stringify(step.ack));
        if (received === closeAfter) socket.close(1000, "torture: resume");
      });
      socket.on("error", () => socket.terminate());
      socket.on("close", () => {
        clearInterval(stopTimer);
        ctx.history.write({ t: "watch", watcher: flavour.watcher, conn, atMs: Date.now(), kind: "close" });
        resolve();
      });
    });
    // A connection that got nothing (the server is down) waits longer before the next try.
    await new Promise((r) => setTimeout(r, received > 0 ? ctx.rng.int(100, 300) : ctx.rng.int(500, 1_000)));
  }
}
