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
 * - Faults (`crash`, `restart`, `pause`, `resume`) and every watch message are entries too,
 *   so a checker needs nothing but this file.
 * - Counters stay decimal strings exactly as on the wire (no bigint in the file).
 *
 * Does not: interpret outcomes (check/*.ts do).
 */
import { createWriteStream, readFileSync, type WriteStream } from "node:fs";

/** What an operation targets: a claim, a generation, a scope (volume/store) or a batch. */
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

/** The run's parameters, first line of every history (the seed reproduces the schedule). */
export interface MetaEntry {
  t: "meta";
  seed: number;
  clients: number;
  durationS: number;
  namespace: string;
  startedAtMs: number;
}

export type HistoryEntry = OpEntry | FaultEntry | WatchEntry | MetaEntry;

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
