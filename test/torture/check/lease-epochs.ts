/**
 * What a history tells of each generation's lease epochs (docs/protocol.md#sessions): for one
 * epoch, the instant through which it was certainly live and the instant by which it had
 * certainly ended. The bound-claim rules judge against these two bounds: a bound claim's
 * holder is entitled to it until its epoch ends, and the end lies between them.
 *
 * **Live through** (the lower bound of the end, `liveThroughMs`): the latest deadline any
 * answer gave the epoch — an HTTP keepalive's, a `GET`'s or another generation route's
 * record, the lease channel's `generation` and `lease` messages, a pong the client counts
 * (one that arrived before the deadline the channel already held: its ping, received no
 * earlier than it was sent and while the epoch was live, kept the lease until ping + ttl),
 * and the deadline a bound claim learned from its generation — cut at the first request
 * that may have ended it early: a `lease/end`, or a move to `retired` or `failed`, answered
 * or not, unless an answer asked after that request completed still showed the epoch live.
 * The server never serves a deadline earlier than one it answered, restarts included (a fresh
 * instance serves at least its first read's time + the ttl of every promise it did not
 * write: docs/generations.md "The lease after a restart"), so the epoch was live through it.
 *
 * **Ended by** (the upper bound, `endedByMs`): the first answer that showed a later epoch, or
 * this one without a lease (`leaseExpiresAtMs` 0, a channel's `ended`); or else the latest
 * deadline anything may have given it — every answered deadline, and every keepalive, channel
 * opening or ping that may have applied to it (an unanswered one until the next crash or
 * {@link UNKNOWN_WINDOW_MS}, a ping until its pong — its channel's close is no bound: a
 * ping the client sent may still reach a paused server later) extended by its
 * ttl, as long as it was asked before the deadline so far — extended by the restart rule
 * (docs/generations.md "The lease after a restart"): a fresh instance (after a crash, or an eviction the
 * runtime may impose at any time) serves at least its first read's time `L` + the ttl of the
 * promises the row holds unwritten (at most the longest ttl asked, `T`), and writes that, so a
 * later fresh instance extends only by promises made after it. `L` is at most when the alarm
 * fires, and while a promise is unwritten the alarm is armed at most at `noticeAtMs(deadline,
 * T)` (src/core/generation-lease.ts: two ttls past it; the instance that answered the promise
 * knows its ttl), run up to {@link ALARM_LATENESS_MS} and a pause late. So, with `c` the
 * deadline so far and `A(c)` that alarm's latest run:
 * - per crash at or before `A(c)` (later, the alarm had ended the epoch), with the server back
 *   at `R` (it runs overdue alarms at once): `max(R + lateness, A(c)) + T`; an eviction's fold
 *   before the crash came before it, so it adds at most up to the crash's time + `T`;
 * - for an eviction: `A(c + T) + T`, and again only after an extender this did not cover yet
 *   (a later fold needs a promise made after the one before it) — after a crash, only one
 *   asked after the crash (the crash's fold wrote the older promises).
 *
 * **Committed by** (`committedByMs`): the end was committed — and its delivery to the claims
 * the epoch bound begun — by the first answer showing it over (lazy expiry commits before
 * answering), or else by the alarm's notice of the lapse: up to two notice ttls past "ended
 * by" (anyone who asks sees the exact deadline; only the unasked notice waits).
 *
 * Times: deadlines are the server's clock, request times the client's; both read the same
 * machine clock, and a request's instant is taken {@link CLOCK_SLACK_MS} early.
 *
 * Does not: judge anything (mutual-exclusion.ts, bound-release.ts and the linearizability
 * check's lease views do); know epochs nobody saw (their bounds are −∞ and +∞, or what a
 * later epoch's first answer implies).
 */
import { noticeAtMs } from "../../../src/core/generation-lease.ts";
import { DEFAULT_LEASE_CHANNEL_TTL_MS } from "../../../src/protocol/generations.ts";
import type { ChannelEntry, HistoryEntry, OpEntry } from "../history.ts";
import { crashes } from "./durability.ts";
import { CLOCK_SLACK_MS, UNKNOWN_WINDOW_MS, claimObservations } from "./observations.ts";

/** The two bounds of one epoch's end (ms, server clock). */
export interface EpochBounds {
  /** The epoch was live through this instant (−Infinity: nothing says so). */
  liveThroughMs: number;
  /** The epoch had ended by this instant (Infinity: nothing says so). */
  endedByMs: number;
  /** When the first answer showing the epoch over completed (Infinity: none did). */
  seenOverMs: number;
  /**
   * The generation had committed the epoch's end — and begun delivering it to the claims it
   * bound — by this instant, unless a crash cut in: the first answer showing it over, else
   * its alarm's notice of the lapse (Infinity: nothing says).
   */
  committedByMs: number;
}

/** A deadline an answer gave an epoch; `askedMs` −Infinity when the answer cannot date when it was live. */
interface Deadline {
  epoch: bigint;
  deadlineMs: number;
  askedMs: number;
  /** The epoch had begun by then. */
  doneMs: number;
}

/** A request that may have ended whichever epoch was current when it applied. */
interface EndRequest {
  askedMs: number;
  doneMs: number;
}

/** A keepalive of any kind that may have moved an epoch's deadline to `appliedByMs + ttlMs` at most. */
interface Extender {
  askedMs: number;
  appliedByMs: number;
  ttlMs: number;
  /** The epoch it applied to, when an answer says. */
  epoch: bigint | undefined;
}

interface GenerationFacts {
  deadlines: Deadline[];
  ends: EndRequest[];
  /** Every epoch up to `epoch` had ended by `byMs`. */
  endedThrough: { epoch: bigint; byMs: number }[];
  extenders: Extender[];
  /** The longest ttl any keepalive or channel of the generation asked for (a channel without one: the default). */
  ttlMs: number;
}

/**
 * How late (ms) the local runtime may run an alarm past its time, taken generously: an
 * overdue alarm runs at once after a restart, and a loaded 2-core machine delays it.
 */
export const ALARM_LATENESS_MS = 2_000;

/** How long the local runtime leaves an object idle before it may evict it. */
export const EVICTION_IDLE_MS = 10_000;

const FINAL_STATES: ReadonlySet<string> = new Set(["retired", "failed"]);

/** One generation's facts, indexed by epoch (built once, on first use). */
interface Indexed {
  facts: GenerationFacts;
  deadlines: Map<bigint, Deadline[]>;
  /** Extenders whose epoch an answer names, by epoch; and those it does not (by `askedMs`). */
  extenders: Map<bigint, Extender[]>;
  unknownExtenders: Extender[];
  /** `endedThrough` by ascending epoch, and the earliest `byMs` from each index on. */
  ended: { epoch: bigint; byMs: number }[];
  endedMinFrom: number[];
  /** For {@link LeaseEpochs.liveThroughout}: epochs by when they had begun, and the latest live-through up to each. */
  begun: { startedByMs: number; liveThroughMs: number }[] | undefined;
  begunMaxUpTo: number[];
}

/** The epoch bounds of every generation of a history (see the module comment). */
export class LeaseEpochs {
  private readonly memo = new Map<string, EpochBounds>();
  private readonly indexes = new Map<string, Indexed>();

  /**
   * @param crashList the history's crashes, each with when the server was back (Infinity: never)
   * @param longestPauseMs the longest pause of the history: an alarm due while paused fires at the resume
   */
  constructor(
    private readonly facts: ReadonlyMap<string, GenerationFacts>,
    private readonly crashList: readonly { crashAtMs: number; restartAtMs: number }[],
    private readonly longestPauseMs: number,
  ) {}

  /** The bounds of `generation`'s epoch `epoch` (a negative epoch is one nobody knows: unbounded). */
  bounds(generation: string, epoch: bigint): EpochBounds {
    const index = this.index(generation);
    if (index === undefined || epoch < 1n)
      return { liveThroughMs: -Infinity, endedByMs: Infinity, seenOverMs: Infinity, committedByMs: Infinity };
    const key = `${generation}@${epoch}`;
    const known = this.memo.get(key);
    if (known !== undefined) return known;
    // The epoch began after the previous one was last certainly live (epochs never overlap):
    // computed in ascending order from the first epoch not yet known, so nothing recurses.
    let e = epoch;
    while (e > 1n && !this.memo.has(`${generation}@${e - 1n}`)) e--;
    let startLo = e > 1n ? this.memo.get(`${generation}@${e - 1n}`)!.liveThroughMs : -Infinity;
    for (; e <= epoch; e++) {
      const b = this.compute(index, e, startLo);
      this.memo.set(`${generation}@${e}`, b);
      startLo = b.liveThroughMs;
    }
    return this.memo.get(key)!;
  }

  /**
   * True when some epoch of `generation` had certainly begun by `fromMs` (an answer showing
   * it live had completed) and was certainly live through `toMs`: every instant between, the
   * generation held a live lease.
   */
  liveThroughout(generation: string, fromMs: number, toMs: number): boolean {
    const index = this.index(generation);
    if (index === undefined) return false;
    if (index.begun === undefined) {
      index.begun = [...index.deadlines.entries()]
        .map(([epoch, ds]) => ({
          startedByMs: ds.reduce((m, d) => Math.min(m, d.doneMs), Infinity),
          liveThroughMs: this.bounds(generation, epoch).liveThroughMs,
        }))
        .sort((a, b) => a.startedByMs - b.startedByMs);
      let max = -Infinity;
      index.begunMaxUpTo = index.begun.map((b) => (max = Math.max(max, b.liveThroughMs)));
    }
    const begun = index.begun;
    let lo = 0;
    let hi = begun.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (begun[mid]!.startedByMs <= fromMs) lo = mid + 1;
      else hi = mid;
    }
    return lo > 0 && index.begunMaxUpTo[lo - 1]! >= toMs;
  }

  /** Every generation and epoch some answer names, in ascending epoch order per generation. */
  *epochs(): Generator<{ generation: string; epoch: bigint }> {
    for (const generation of this.facts.keys()) {
      const index = this.index(generation)!;
      const known = new Set([...index.deadlines.keys(), ...index.ended.map((t) => t.epoch)]);
      for (const epoch of [...known].filter((e) => e >= 1n).sort((a, b) => (a < b ? -1 : 1))) {
        yield { generation, epoch };
      }
    }
  }

  /** The longest ttl any keepalive or channel of `generation` asked for (0: none). */
  maxTtlMs(generation: string): number {
    return this.facts.get(generation)?.ttlMs ?? 0;
  }

  /** When an alarm due at `dueMs` (or a call the server owes then) has run at the latest. */
  private late(dueMs: number): number {
    return dueMs + ALARM_LATENESS_MS + this.longestPauseMs;
  }

  private index(generation: string): Indexed | undefined {
    const known = this.indexes.get(generation);
    if (known !== undefined) return known;
    const facts = this.facts.get(generation);
    if (facts === undefined) return undefined;
    const deadlines = new Map<bigint, Deadline[]>();
    const push = <T>(map: Map<bigint, T[]>, epoch: bigint, item: T): void => {
      const list = map.get(epoch);
      if (list === undefined) map.set(epoch, [item]);
      else list.push(item);
    };
    for (const d of facts.deadlines) push(deadlines, d.epoch, d);
    const extenders = new Map<bigint, Extender[]>();
    const unknownExtenders: Extender[] = [];
    for (const x of facts.extenders) {
      if (x.epoch === undefined) unknownExtenders.push(x);
      else push(extenders, x.epoch, x);
    }
    const ended = [...facts.endedThrough].sort((a, b) => (a.epoch < b.epoch ? -1 : a.epoch > b.epoch ? 1 : 0));
    const endedMinFrom: number[] = new Array<number>(ended.length);
    for (let i = ended.length - 1, min = Infinity; i >= 0; i--) endedMinFrom[i] = min = Math.min(min, ended[i]!.byMs);
    const index: Indexed = {
      facts,
      deadlines,
      extenders,
      unknownExtenders,
      ended,
      endedMinFrom,
      begun: undefined,
      begunMaxUpTo: [],
    };
    this.indexes.set(generation, index);
    return index;
  }

  private compute(index: Indexed, epoch: bigint, startLo: number): EpochBounds {
    const own = index.deadlines.get(epoch) ?? [];
    let maxDeadline = -Infinity;
    // An answer asked after a request completed, still showing the epoch live: that request did not end it.
    let lastSeenLiveAsked = -Infinity;
    for (const d of own) {
      maxDeadline = Math.max(maxDeadline, d.deadlineMs);
      lastSeenLiveAsked = Math.max(lastSeenLiveAsked, d.askedMs);
    }
    let cut = Infinity;
    for (const r of index.facts.ends) {
      if (r.doneMs < lastSeenLiveAsked || r.doneMs + CLOCK_SLACK_MS < startLo) continue;
      cut = Math.min(cut, r.askedMs - CLOCK_SLACK_MS);
    }
    const liveThroughMs = Math.min(maxDeadline, cut);

    // The first answer showing this epoch, or a later one, over.
    let lo = 0;
    let hi = index.ended.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (index.ended[mid]!.epoch < epoch) lo = mid + 1;
      else hi = mid;
    }
    const seenOverMs = lo < index.ended.length ? index.endedMinFrom[lo]! : Infinity;
    const lapsedByMs = maxDeadline > -Infinity ? this.chain(index, epoch, maxDeadline, startLo) : Infinity;
    const endedByMs = Math.min(seenOverMs, lapsedByMs);
    const committedByMs = Math.min(seenOverMs, this.noticedBy(index, lapsedByMs, startLo));
    return { liveThroughMs, endedByMs, seenOverMs, committedByMs };
  }

  /**
   * By when the alarm has noticed a lapse at `deadlineMs`: it is armed at
   * `noticeAtMs(deadline, ttl)` (src/core/generation-lease.ts) with the longest ttl the
   * instance knows (at most the longest asked, `T`), or with the channel default when it knows
   * none. An instance knows none only when its first read found no promise unwritten and it
   * answered no keepalive and holds no channel; its alarm re-arms a live lease — by that
   * default — only after a fold moved the deadline past the alarm and a fresh instance came
   * before the alarm: after a crash, or after an eviction, which takes
   * {@link EVICTION_IDLE_MS} idle, more than the ttl unless the ttl is longer. So `T` unless a
   * crash came since the epoch may have begun or `T` is longer than that idle time (or
   * unknown): then the longer of `T` and the default.
   */
  private noticedBy(index: Indexed, deadlineMs: number, startLo: number): number {
    const ttlMs = index.facts.ttlMs;
    const safeTtlMs = Math.max(ttlMs, DEFAULT_LEASE_CHANNEL_TTL_MS);
    const latestMs = this.late(noticeAtMs(deadlineMs, safeTtlMs));
    const crashed = this.crashList.some((k) => k.crashAtMs >= startLo && k.crashAtMs <= latestMs);
    if (crashed || ttlMs === 0 || ttlMs > EVICTION_IDLE_MS) return latestMs;
    return this.late(noticeAtMs(deadlineMs, ttlMs));
  }

  /** The latest deadline the epoch may have reached from `deadlineMs` (see "ended by" in the module comment). */
  private chain(index: Indexed, epoch: bigint, deadlineMs: number, startLo: number): number {
    const extenders = [...(index.extenders.get(epoch) ?? []), ...index.unknownExtenders].sort(
      (a, b) => a.askedMs - b.askedMs,
    );
    const ttlMs = index.facts.ttlMs;
    // While a promise is unwritten the alarm is armed by its ttl (the instance that answered it knows it).
    const noticeBy = (c: number): number => this.late(noticeAtMs(c, ttlMs));
    // A fresh instance's first read is at most when the alarm fires: it serves that + the ttl.
    const evicted = (c: number): number => noticeBy(c + ttlMs) + ttlMs;
    const restarts = this.crashList.filter((k) => k.crashAtMs >= startLo);
    let c = deadlineMs;
    let next = 0;
    let crash = 0;
    // An eviction's fold may extend: a promise it did not cover yet may be unwritten.
    let promised = true;
    for (;;) {
      while (next < extenders.length && extenders[next]!.askedMs <= c) {
        const x = extenders[next++]!;
        c = Math.max(c, x.appliedByMs + x.ttlMs);
        promised = true;
      }
      const k = restarts[crash];
      if (k !== undefined && k.crashAtMs <= noticeBy(c)) {
        crash++;
        // Folds of evictions before the crash read the row before it.
        if (promised) c = Math.max(c, Math.min(evicted(c), k.crashAtMs + ttlMs));
        // Back at R, the server runs the overdue alarm at once: the first read is by then, or the alarm's time.
        c = Math.max(c, Math.max(this.late(k.restartAtMs), noticeBy(c)) + ttlMs);
        // The crash's fold wrote the older promises: only one asked after it is left.
        promised = extenders.slice(0, next).some((x) => x.askedMs > k.crashAtMs);
      } else if (promised) {
        c = evicted(c);
        promised = false;
      } else {
        return c;
      }
    }
  }
}

/** Collect what `history` says of every generation's lease (see the module comment). */
export function leaseEpochs(history: readonly HistoryEntry[]): LeaseEpochs {
  const crashList = crashes(history);
  const crashTimes = crashList.map((c) => c.crashAtMs);
  const nextCrash = (t: number): number => crashTimes.find((c) => c > t) ?? Infinity;
  const appliedBy = (askedMs: number): number => Math.min(nextCrash(askedMs), askedMs + UNKNOWN_WINDOW_MS);
  const facts = new Map<string, GenerationFacts>();
  const of = (id: string): GenerationFacts => {
    let f = facts.get(id);
    if (f === undefined) {
      f = { deadlines: [], ends: [], endedThrough: [], extenders: [], ttlMs: 0 };
      facts.set(id, f);
    }
    return f;
  };
  /** What one answered record says: the epoch live until its deadline, or ended. */
  const learn = (id: string, record: LeaseFields, askedMs: number, doneMs: number): void => {
    const epoch = BigInt(record.leaseEpoch);
    if (epoch < 1n) return;
    const f = of(id);
    if (record.leaseExpiresAtMs > 0) {
      f.deadlines.push({ epoch, deadlineMs: record.leaseExpiresAtMs, askedMs, doneMs });
      f.endedThrough.push({ epoch: epoch - 1n, byMs: doneMs });
    } else {
      f.endedThrough.push({ epoch, byMs: doneMs });
    }
  };

  const ends = new Map<number, { id: string; attempts: OpEntry[] }>();
  for (const entry of history) {
    if (entry.t !== "op" || !entry.route.endsWith("Generation")) continue;
    const o = entry.outcome;
    if (o.type === "error" && o.code === "unavailable") continue;
    const record = generationOf(entry);
    if (record !== undefined) learn(entry.target, record, entry.invokeMs, entry.completeMs);
    if (entry.route === "keepaliveGeneration") {
      const f = of(entry.target);
      const ttlMs = (entry.request as { ttlMs: number }).ttlMs;
      f.ttlMs = Math.max(f.ttlMs, ttlMs);
      if (o.type === "ok" && record !== undefined) {
        const epoch = BigInt(record.leaseEpoch);
        f.extenders.push({ askedMs: entry.invokeMs, appliedByMs: entry.completeMs, ttlMs, epoch });
      } else if (o.type === "unknown") {
        f.extenders.push({ askedMs: entry.invokeMs, appliedByMs: appliedBy(entry.invokeMs), ttlMs, epoch: undefined });
      }
    }
    const ending =
      entry.route === "endLeaseGeneration" ||
      (entry.route === "updateGeneration" && FINAL_STATES.has((entry.request as { state?: string }).state ?? ""));
    if (ending) {
      // Retries (same operationId) are one request.
      const root = entry.retryOf ?? entry.id;
      const r = ends.get(root) ?? { id: entry.target, attempts: [] };
      r.attempts.push(entry);
      ends.set(root, r);
    }
  }
  for (const { id, attempts } of ends.values()) {
    // Asked with the first attempt; applied by the first answer, else (all unanswered) by the latest one's reach.
    const answered = attempts.filter((a) => a.outcome.type === "ok").map((a) => a.completeMs);
    const unanswered = attempts.filter((a) => a.outcome.type === "unknown").map((a) => appliedBy(a.invokeMs));
    if (answered.length === 0 && unanswered.length === 0) continue; // refused: no effect
    const doneMs = answered.length > 0 ? Math.min(...answered) : Math.max(...unanswered);
    of(id).ends.push({ askedMs: Math.min(...attempts.map((a) => a.invokeMs)), doneMs });
  }

  // A bound claim's deadline is one its generation answered: the epoch was live until it.
  for (const o of claimObservations(history)) {
    const c = o.claim;
    if (c.bound !== true || c.phase === "unowned" || c.leaseEpoch === undefined) continue;
    learn(c.ownerGeneration, { leaseEpoch: c.leaseEpoch, leaseExpiresAtMs: c.expiresAtMs }, -Infinity, o.completeMs);
  }

  for (const conn of channels(history)) learnChannel(of(conn.generation), conn, learn, appliedBy);

  return new LeaseEpochs(facts, crashList, longestPause(history));
}

interface LeaseFields {
  leaseEpoch: string;
  leaseExpiresAtMs: number;
}

/** The generation record an operation's answer carries (a `generation_exists` refusal carries one too). */
export function generationOf(op: OpEntry): (LeaseFields & { state: string }) | undefined {
  const o = op.outcome;
  const body =
    o.type === "ok" ? o.body : o.type === "error" ? (o.body as { error?: unknown } | null)?.error : undefined;
  const record = (body as { generation?: LeaseFields & { state: string } } | null | undefined)?.generation;
  return record !== undefined && record !== null && typeof record.leaseEpoch === "string" ? record : undefined;
}

/** One lease channel connection: its entries in order. */
interface Channel {
  generation: string;
  openMs: number;
  ttlMs: number;
  pings: number[];
  messages: { atMs: number; msg: Record<string, unknown> }[];
}

function channels(history: readonly HistoryEntry[]): Channel[] {
  const conns = new Map<number, Channel>();
  for (const e of history) {
    if (e.t !== "channel") continue;
    const c = conns.get(e.conn) ?? channelOf(e);
    conns.set(e.conn, c);
    if (e.kind === "ping") c.pings.push(e.atMs);
    if (e.kind === "message" && typeof e.msg === "object" && e.msg !== null) {
      c.messages.push({ atMs: e.atMs, msg: e.msg as Record<string, unknown> });
    }
  }
  return [...conns.values()];
}

function channelOf(e: ChannelEntry): Channel {
  const ttlMs = e.ttlMs ?? DEFAULT_LEASE_CHANNEL_TTL_MS;
  return { generation: e.generation, openMs: e.atMs, ttlMs, pings: [], messages: [] };
}

/** The longest pause (SIGSTOP to SIGCONT) of a history (0: none). */
function longestPause(history: readonly HistoryEntry[]): number {
  let longest = 0;
  let pausedAtMs: number | undefined;
  for (const e of history) {
    if (e.t !== "fault") continue;
    if (e.kind === "pause") pausedAtMs = e.atMs;
    if (e.kind === "resume" && pausedAtMs !== undefined) longest = Math.max(longest, e.atMs - pausedAtMs);
  }
  return longest;
}

/**
 * A channel's facts: its opening's record and its `lease` messages (live from the opening on),
 * `ended` (the epoch ended), the pongs the client counts, and every ping and the opening as
 * extenders (received before its answer, else before the next crash or the unknown window).
 */
function learnChannel(
  f: GenerationFacts,
  c: Channel,
  learn: (id: string, record: LeaseFields, askedMs: number, doneMs: number) => void,
  appliedBy: (askedMs: number) => number,
): void {
  f.ttlMs = Math.max(f.ttlMs, c.ttlMs);
  let epoch: bigint | undefined;
  let heldMs = -Infinity;
  let pong = 0;
  let openedByMs: number | undefined;
  for (const { atMs, msg } of c.messages) {
    if (msg["type"] === "generation") {
      const record = msg["generation"] as LeaseFields;
      learn(c.generation, record, c.openMs, atMs);
      epoch = BigInt(record.leaseEpoch);
      heldMs = Math.max(heldMs, record.leaseExpiresAtMs);
      openedByMs = atMs;
    } else if (msg["type"] === "lease") {
      const record = { leaseEpoch: String(msg["leaseEpoch"]), leaseExpiresAtMs: Number(msg["leaseExpiresAtMs"]) };
      learn(c.generation, record, c.openMs, atMs);
      heldMs = Math.max(heldMs, record.leaseExpiresAtMs);
    } else if (msg["type"] === "ended") {
      learn(c.generation, { leaseEpoch: String(msg["leaseEpoch"]), leaseExpiresAtMs: 0 }, c.openMs, atMs);
    } else if (msg["type"] === "pong") {
      const sentMs = c.pings[pong++];
      if (sentMs === undefined) continue;
      f.extenders.push({ askedMs: sentMs, appliedByMs: atMs, ttlMs: c.ttlMs, epoch });
      // Counted only when it came before the deadline already held: the ping kept a live lease.
      if (epoch !== undefined && atMs < heldMs) {
        f.deadlines.push({ epoch, deadlineMs: sentMs + c.ttlMs, askedMs: -Infinity, doneMs: atMs });
        heldMs = Math.max(heldMs, sentMs + c.ttlMs);
      }
    }
  }
  f.extenders.push({ askedMs: c.openMs, appliedByMs: openedByMs ?? appliedBy(c.openMs), ttlMs: c.ttlMs, epoch });
  for (const sentMs of c.pings.slice(pong)) {
    f.extenders.push({ askedMs: sentMs, appliedByMs: appliedBy(sentMs), ttlMs: c.ttlMs, epoch });
  }
}
