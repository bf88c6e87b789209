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
 * The server never serves a deadline earlier than one it answered, restarts included
 * (docs/generations.md "The lease after a restart"), so the epoch was live through it.
 *
 * **Ended by** (the upper bound, `endedByMs`): the first answer that showed a later epoch, or
 * this one without a lease (`leaseExpiresAtMs` 0, a channel's `ended`); or else the latest
 * deadline anything may have given it — every answered deadline, and every keepalive, channel
 * opening or ping that may have applied to it (an unanswered one until the next crash or
 * {@link UNKNOWN_WINDOW_MS}, a ping until its pong — its channel's close is no bound: a
 * ping the client sent may still reach a paused server later) extended by its
 * ttl, as long as it was asked before the deadline so far — plus the restart slack for every
 * crash from the epoch's earliest start to that deadline, and once more for an eviction (the
 * runtime may restart an idle object at any time, no crash needed): after a restart the
 * generation serves its persisted horizon, up to two ttls past the deadlines answered (a
 * channel's horizon runs one ttl further, for the pings it expects before its next alarm:
 * three).
 *
 * Times: deadlines are the server's clock, request times the client's; both read the same
 * machine clock, and a request's instant is taken {@link CLOCK_SLACK_MS} early.
 *
 * Does not: judge anything (mutual-exclusion.ts, bound-release.ts and the linearizability
 * check's lease views do); know epochs nobody saw (their bounds are −∞ and +∞, or what a
 * later epoch's first answer implies).
 */
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
  /** The restart slack: two HTTP ttls, or three channel ttls, the longest asked. */
  slackMs: number;
  /** The longest ttl any keepalive or channel of the generation asked for. */
  ttlMs: number;
}

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

  constructor(
    private readonly facts: ReadonlyMap<string, GenerationFacts>,
    private readonly crashTimes: readonly number[],
  ) {}

  /** The bounds of `generation`'s epoch `epoch` (a negative epoch is one nobody knows: unbounded). */
  bounds(generation: string, epoch: bigint): EpochBounds {
    const index = this.index(generation);
    if (index === undefined || epoch < 1n)
      return { liveThroughMs: -Infinity, endedByMs: Infinity, seenOverMs: Infinity };
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
    let endedByMs = seenOverMs;
    if (maxDeadline > -Infinity) endedByMs = Math.min(endedByMs, this.chain(index, epoch, maxDeadline, startLo));
    return { liveThroughMs, endedByMs, seenOverMs };
  }

  /** The latest deadline the epoch may have reached from `deadlineMs` (see "ended by" in the module comment). */
  private chain(index: Indexed, epoch: bigint, deadlineMs: number, startLo: number): number {
    const extenders = [...(index.extenders.get(epoch) ?? []), ...index.unknownExtenders].sort(
      (a, b) => a.askedMs - b.askedMs,
    );
    const restarts = this.crashTimes.filter((k) => k >= startLo);
    let c = deadlineMs;
    let next = 0;
    let crash = 0;
    let eviction = 1;
    for (;;) {
      while (next < extenders.length && extenders[next]!.askedMs <= c) {
        const x = extenders[next++]!;
        c = Math.max(c, x.appliedByMs + x.ttlMs);
      }
      // A restart serves the horizon: a crash in reach, else the one eviction that may come at any time.
      if (crash < restarts.length && restarts[crash]! <= c) crash++;
      else if (eviction > 0) eviction--;
      else return c;
      c += index.facts.slackMs;
    }
  }
}

/** Collect what `history` says of every generation's lease (see the module comment). */
export function leaseEpochs(history: readonly HistoryEntry[]): LeaseEpochs {
  const crashTimes = crashes(history).map((c) => c.crashAtMs);
  const nextCrash = (t: number): number => crashTimes.find((c) => c > t) ?? Infinity;
  const appliedBy = (askedMs: number): number => Math.min(nextCrash(askedMs), askedMs + UNKNOWN_WINDOW_MS);
  const facts = new Map<string, GenerationFacts>();
  const of = (id: string): GenerationFacts => {
    let f = facts.get(id);
    if (f === undefined) {
      f = { deadlines: [], ends: [], endedThrough: [], extenders: [], slackMs: 0, ttlMs: 0 };
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
      f.slackMs = Math.max(f.slackMs, 2 * ttlMs);
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

  return new LeaseEpochs(facts, crashTimes);
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
  return { generation: e.generation, openMs: e.atMs, ttlMs: e.ttlMs ?? 0, pings: [], messages: [] };
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
  f.slackMs = Math.max(f.slackMs, 3 * c.ttlMs);
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
