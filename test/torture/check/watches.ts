/**
 * Checker: watches. Each connection of a watcher is judged from the resume point it sent
 * (`afterVersion` / `afterGeneration`, recorded on its `open` entry): docs/protocol.md#claims, #coord promise
 * every change after that point exactly once, in order, or an explicit catch-up. A watcher
 * may resume from an earlier point than the last it received (the torture's watchers rewind
 * on purpose), so events it already had are legitimately sent again on that connection.
 *
 * Violations:
 * - claims: on one connection, an event whose version is not above the resume point or the
 *   last one received (a duplicate or a reordering); a snapshot on a resumed connection that
 *   skips ahead without `truncated: true`; a snapshot older than the newest version the
 *   watcher ever saw (the claim went back in time); an event whose reason differs from its
 *   record's; a gap: a change that produced an event (a record answered with an event
 *   reason: acquired, transfer_prepared, transfer_committed, transfer_aborted, released,
 *   expired) at a version the connection covers but never delivered;
 * - coord: on one connection, a publish event whose generation is not above the resume
 *   point or the last publish received (a `replay` event is the explicit catch-up and resets
 *   the baseline); an acknowledged publish the connection covers but never delivered; a
 *   publish event whose root differs from the root an acknowledged publish of that
 *   generation sent (a publish without a root stores none, and its event's root is not
 *   judged).
 * Events agree with acknowledged responses field by field: claim-records.ts compares every
 * record at one version, watch events included.
 */
import { CLAIM_EVENT_REASONS } from "../../../src/protocol/claims.ts";
import type { HistoryEntry, WatchEntry } from "../history.ts";
import { claimObservations, groupBy, type Violation, type WireClaim } from "./observations.ts";

const CHECKER = "watches";
const EVENT_REASONS: ReadonlySet<string> = new Set(CLAIM_EVENT_REASONS);

/** A stretch of a stream with no explicit break: every change in (base, last] must be in it. */
interface Segment {
  base: bigint;
  last: bigint;
  seen: Set<bigint>;
}

export function checkWatches(history: readonly HistoryEntry[]): Violation[] {
  const violations: Violation[] = [];
  const watches = history.filter((e): e is WatchEntry => e.t === "watch");
  // Versions known to have produced a claim event, from answers (not from the watchers).
  const eventVersions = new Map<string, Set<bigint>>();
  for (const o of claimObservations(history)) {
    if (o.source.startsWith("watch") || !EVENT_REASONS.has(o.claim.reason)) continue;
    const set = eventVersions.get(o.claim.name) ?? new Set<bigint>();
    set.add(BigInt(o.claim.version));
    eventVersions.set(o.claim.name, set);
  }
  // Acknowledged publishes per scope: generation → root.
  const publishes = new Map<string, Map<bigint, string | undefined>>();
  for (const e of history) {
    if (e.t !== "op" || e.route !== "publish" || e.outcome.type !== "ok") continue;
    const snap = e.outcome.body as { generation: string };
    const request = e.request as { root?: unknown };
    const map = publishes.get(e.target) ?? new Map<bigint, string | undefined>();
    // The event carries the root this publish stored: only a publish with a root stores one.
    map.set(BigInt(snap.generation), "root" in request ? JSON.stringify(request.root) : undefined);
    publishes.set(e.target, map);
  }
  for (const [watcher, entries] of groupBy(watches, (w) => w.watcher)) {
    if (watcher.startsWith("claim:")) {
      const claim = watcher.slice("claim:".length);
      const segments = claimStream(watcher, entries, violations);
      gaps(watcher, segments, eventVersions.get(claim) ?? new Set(), violations);
    } else {
      const scope = watcher.slice("scope:".length);
      const acked = publishes.get(scope) ?? new Map<bigint, string | undefined>();
      const segments = scopeStream(watcher, entries, acked, violations);
      gaps(watcher, segments, new Set(acked.keys()), violations);
    }
  }
  return violations;
}

function claimStream(watcher: string, entries: WatchEntry[], out: Violation[]): Segment[] {
  const segments: Segment[] = [];
  let current: Segment | undefined;
  let resumedAfter: string | undefined;
  /** The newest version this watcher has seen on any connection. */
  let newest: bigint | undefined;
  for (const e of entries) {
    if (e.kind === "open") {
      // A new connection starts a new stretch, from the point it resumes after.
      resumedAfter = e.after;
      current = undefined;
    }
    if (e.kind !== "message") continue;
    const msg = e.msg as { type: string; truncated?: boolean; reason?: string; claim: WireClaim | null };
    if (msg.type === "snapshot") {
      const version = BigInt(msg.claim?.version ?? "0");
      if (newest !== undefined && version < newest) {
        out.push({
          checker: CHECKER,
          message: `${watcher}#${e.conn}: snapshot at version ${version} after version ${newest}`,
        });
      }
      if (resumedAfter !== undefined && msg.truncated !== true && version > BigInt(resumedAfter)) {
        out.push({
          checker: CHECKER,
          message: `${watcher}#${e.conn}: resumed after ${resumedAfter}, got a snapshot at ${version} without truncated`,
        });
      }
      current = { base: version, last: version, seen: new Set() };
      segments.push(current);
      if (newest === undefined || version > newest) newest = version;
    } else if (msg.type === "event" && msg.claim !== null) {
      const version = BigInt(msg.claim.version);
      if (current === undefined) {
        const base = BigInt(resumedAfter ?? "0");
        current = { base, last: base, seen: new Set() };
        segments.push(current);
      }
      if (version <= current.last) {
        out.push({
          checker: CHECKER,
          message: `${watcher}#${e.conn}: event at version ${version} after version ${current.last}`,
        });
        continue;
      }
      if (msg.reason !== msg.claim.reason) {
        out.push({
          checker: CHECKER,
          message: `${watcher}#${e.conn}: event ${msg.reason} carries a record with reason ${msg.claim.reason}`,
        });
      }
      current.seen.add(version);
      current.last = version;
      if (newest === undefined || version > newest) newest = version;
    }
  }
  return segments;
}

function scopeStream(
  watcher: string,
  entries: WatchEntry[],
  acked: Map<bigint, string | undefined>,
  out: Violation[],
): Segment[] {
  const segments: Segment[] = [];
  let current: Segment | undefined;
  let resumedAfter: string | undefined;
  for (const e of entries) {
    if (e.kind === "open") {
      // A new connection starts a new stretch: from its resume point, or (none sent) from
      // the generation its `ready` reports.
      resumedAfter = e.after;
      current = undefined;
    }
    if (e.kind !== "message") continue;
    const msg = e.msg as {
      type: string;
      generation: string;
      wantLock?: boolean;
      unlocked?: boolean;
      replay?: boolean;
      rootChanged?: unknown;
    };
    const generation = BigInt(msg.generation);
    if (msg.type === "ready") {
      if (current === undefined) {
        const base = resumedAfter === undefined ? generation : BigInt(resumedAfter);
        current = { base, last: base, seen: new Set() };
        segments.push(current);
      }
      continue;
    }
    if (msg.type !== "event" || msg.wantLock === true || msg.unlocked === true || current === undefined) continue;
    if (msg.replay === true) {
      if (generation < current.last) {
        out.push({
          checker: CHECKER,
          message: `${watcher}#${e.conn}: replay at generation ${generation} after ${current.last}`,
        });
      }
      current = { base: generation, last: generation, seen: new Set() };
      segments.push(current);
      continue;
    }
    if (generation <= current.last) {
      out.push({
        checker: CHECKER,
        message: `${watcher}#${e.conn}: publish event at generation ${generation} after ${current.last}`,
      });
      continue;
    }
    const root = acked.get(generation);
    if (root !== undefined && root !== JSON.stringify(msg.rootChanged)) {
      out.push({
        checker: CHECKER,
        message: `${watcher}#${e.conn}: publish event at generation ${generation} with root ${JSON.stringify(msg.rootChanged)}, acknowledged root ${root}`,
      });
    }
    current.seen.add(generation);
    current.last = generation;
  }
  return segments;
}

function gaps(watcher: string, segments: Segment[], produced: Set<bigint>, out: Violation[]): void {
  for (const s of segments) {
    for (const v of produced) {
      if (v > s.base && v <= s.last && !s.seen.has(v)) {
        out.push({
          checker: CHECKER,
          message: `${watcher}: change at ${v} never delivered (stream covered ${s.base}..${s.last})`,
        });
      }
    }
  }
}

/** How much of the watch protocol a history exercised (reported with the checks). */
export interface WatchCoverage {
  connections: number;
  messages: number;
  /** Connections that resumed from before the newest point their watcher had seen. */
  rewinds: number;
  /** Events at or below that newest point, sent again on a rewound connection (replays). */
  replayed: number;
  /** Claim snapshots marked `truncated` (the history no longer reached the resume point). */
  truncated: number;
  /** Coord `replay` events (the same, for a scope). */
  replays: number;
}

export function watchCoverage(history: readonly HistoryEntry[]): WatchCoverage {
  const c: WatchCoverage = { connections: 0, messages: 0, rewinds: 0, replayed: 0, truncated: 0, replays: 0 };
  for (const [, entries] of groupBy(
    history.filter((e): e is WatchEntry => e.t === "watch"),
    (w) => w.watcher,
  )) {
    let newest: bigint | undefined;
    let before: bigint | undefined;
    for (const e of entries) {
      if (e.kind === "open") {
        c.connections++;
        before = newest;
        if (e.after !== undefined && newest !== undefined && BigInt(e.after) < newest) c.rewinds++;
        continue;
      }
      if (e.kind !== "message") continue;
      c.messages++;
      const msg = e.msg as {
        type: string;
        truncated?: boolean;
        replay?: boolean;
        wantLock?: boolean;
        unlocked?: boolean;
        generation?: string;
        claim?: WireClaim | null;
      };
      // A coord wantLock/unlocked event carries the current generation; it is not a publish.
      const change = msg.type === "event" && msg.wantLock !== true && msg.unlocked !== true;
      const point =
        msg.claim != null
          ? BigInt(msg.claim.version)
          : msg.generation !== undefined
            ? BigInt(msg.generation)
            : undefined;
      if (msg.type === "snapshot" && msg.truncated === true) c.truncated++;
      if (msg.type === "event" && msg.replay === true) c.replays++;
      if (change && point !== undefined && before !== undefined && point <= before && msg.replay !== true) {
        c.replayed++;
      }
      if (point !== undefined && (newest === undefined || point > newest)) newest = point;
    }
  }
  return c;
}
