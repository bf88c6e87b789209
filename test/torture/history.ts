/**
 * The torture history: one JSON object per line (JSONL), written as things happen.
 *
 * Guarantees:
 * - Every operation a client invokes is one `op` entry, written when it completes (or when
 *   the run ends with it still pending, as `unknown`), with its invoke and completion times
 *   (client wall clock, ms), the request as sent and the outcome: `ok` (status + body),
 *   `error` (a refusal the server answered: status + code + body) or `unknown` (no answer:
 *   timeout, reset connection, 5xx — the operation may or may not have taken effect).
 * - Connection refused is `error` with code `unavailable`: the request never reached a
 *   server, so it certainly had no effect.
 * - Faults (`crash`, `restart`, `pause`, `resume`), every watch message, every frame of a
 *   lease channel (`channel`: its opening, each ping as sent, each message, its close) and
 *   what the listing judge read at each quiet point (`listing`) are entries too, so a
 *   checker needs nothing but this file.
 * - Counters stay decimal strings exactly as on the wire (no bigint in the file).
 *
 * Does not: interpret outcomes (check/*.ts do).
 */
import { createWriteStream, readFileSync, type WriteStream } from "node:fs";

/**
 * What an operation targets: a claim, a generation, a scope (volume/store) or a batch. The
 * generation routes end in `Generation` (a generation's lease included): check/durability.ts
 * reads the state their answers carry.
 */
export type OpRoute =
  | "acquire"
  | "renew"
  | "release"
  | "prepare"
  | "commit"
  | "abort"
  | "get"
  | "batch"
  | "registerGeneration"
  | "updateGeneration"
  | "getGeneration"
  | "keepaliveGeneration"
  | "endLeaseGeneration"
  | "leaseTry"
  | "leaseWait"
  | "keepalive"
  | "publish"
  | "leaseRelease"
  | "snapshot";

export type Outcome =
  | { type: "ok"; status: number; body: unknown }
  | { type: "error"; status: number; code: string; body: unknown }
  | { type: "unknown"; reason: string };

export interface OpEntry {
  t: "op";
  /** Unique per history. */
  id: number;
  client: number;
  route: OpRoute;
  /** Claim name, generation id or scope (`volume/store`); "" for a batch. */
  target: string;
  /** Path parameters beyond the target (the lease id of lease routes). */
  leaseId?: string;
  /** The JSON body as sent (undefined for GET/DELETE). */
  request: unknown;
  invokeMs: number;
  completeMs: number;
  outcome: Outcome;
  /** The id of the first attempt when this is a retry with the same operationId. */
  retryOf?: number;
}

export interface FaultEntry {
  t: "fault";
  kind: "crash" | "restart" | "pause" | "resume";
  atMs: number;
  /** A lapse crash (faults.ts): deadlines timed to fall while the server is down, or at its start. */
  lapse?: "lapsed" | "edge";
  /** A session crash (faults.ts): right after a lease was ended, or as one expires. */
  session?: "ended" | "expiring";
}

/** One object as the listing judge last read it (`GET`), and since when it read that. */
export interface ObjectRead {
  /** The wire record; null when the object answered not found. */
  value: unknown;
  /** When the judge first read this value (the listing's lag bound runs from here). */
  sinceMs: number;
  /** When the judge asked the last read that answered this value (the value was current after it). */
  readAtMs?: number;
  /** The last read got no answer (`value` is the one before, if any). */
  unread?: true;
}

/**
 * What the listing judge read at one quiet point (listing-probe.ts), as of its last round:
 * every object the run addresses, read from the object, and the namespace's listing and
 * stats read after it. check/listing.ts judges it.
 */
export interface ListingEntry {
  t: "listing";
  /** `lapse <n> (<mode>)` or `end`. */
  label: string;
  /**
   * From when nothing but the judge and the watchers' reads called the server: the clients'
   * quiet point (quiet.ts), or the restart after a lapse crash (faults.ts).
   */
  quietAtMs: number;
  /** From this instant no lease or queued wait of the run can be live (scopes' lease fields are judged from it). */
  leasesFreeAtMs: number;
  /** When the last round's listing read began. */
  listingAtMs: number;
  rounds: number;
  /** By claim name, generation id and `volume/store`; a scope's value is `{generation, mustList}`. */
  objects: {
    claims: Record<string, ObjectRead>;
    generations: Record<string, ObjectRead>;
    scopes: Record<string, ObjectRead>;
  };
  /** The listing's pages (all of them, in order) and `/stats`, as answered. */
  listing: { claims: unknown[]; generations: unknown[]; scopes: unknown[]; stats: unknown };
}

export interface WatchEntry {
  t: "watch";
  /** `claim:<name>` or `scope:<volume>/<store>`. */
  watcher: string;
  /** Connection number of this watcher (each reconnect is a new one). */
  conn: number;
  atMs: number;
  /** `open` (with the URL's resume point), a message from the server, or `close`. */
  kind: "open" | "message" | "close";
  after?: string;
  msg?: unknown;
}

/**
 * One frame of a generation's lease channel (docs/protocol.md#sessions), as the client saw
 * it: `open` when it asked to connect (with the channel's `ttlMs`), `ping` when it sent a
 * `{"type":"ping"}`, `message` for every frame received (the generation record first, then
 * pongs in the order of the pings, `lease` and `ended`), `close` when it saw the channel end
 * (or gave up on it). Every entry of one connection shares `conn`.
 */
export interface ChannelEntry {
  t: "channel";
  generation: string;
  conn: number;
  atMs: number;
  kind: "open" | "ping" | "message" | "close";
  ttlMs?: number;
  msg?: unknown;
}

/** The run's parameters, first line of every history (the seed reproduces the schedule). */
export interface MetaEntry {
  t: "meta";
  seed: number;
  clients: number;
  durationS: number;
  namespace: string;
  startedAtMs: number;
}

export type HistoryEntry = OpEntry | FaultEntry | WatchEntry | MetaEntry | ListingEntry | ChannelEntry;

/** Appends entries to a JSONL file. */
export class HistoryWriter {
  private readonly stream: WriteStream;
  private nextId = 1;

  constructor(path: string) {
    this.stream = createWriteStream(path, { flags: "w" });
  }

  /** A fresh operation id. */
  newId(): number {
    return this.nextId++;
  }

  write(entry: HistoryEntry): void {
    this.stream.write(`${JSON.stringify(entry)}\n`);
  }

  async close(): Promise<void> {
    await new Promise<void>((resolve, reject) =>
      this.stream.end((err?: Error | null) => (err ? reject(err) : resolve())),
    );
  }
}

/** Read a history file back. */
export function readHistory(path: string): HistoryEntry[] {
  return readFileSync(path, "utf8")
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => JSON.parse(line) as HistoryEntry);
}
