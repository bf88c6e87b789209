/**
 * What every `shiftlock` command gets: the printer, its flags and words, lazily built
 * clients (HTTP from `--url`/`--token`/`--namespace` or `SHIFTLOCK_*`, or ones injected
 * by tests), and the Ctrl-C signal.
 */
import type { ClaimsBackend, Coordinator, FetchLike, WebSocketConstructor } from "../client/index.ts";
import type { Flags } from "./args.ts";
import type { Printer } from "./output.ts";

/** The process around the CLI; tests pass their own. */
export interface CliIo {
  stdout(text: string): void;
  stderr(text: string): void;
  env: Record<string, string | undefined>;
  /** Aborts on Ctrl-C: watches stop, a held lease is released. */
  signal?: AbortSignal;
  /**
   * SIGINT/SIGTERM as they arrive, for `run` commands that forward them to their command;
   * returns the unsubscribe function. While a listener is subscribed, the process leaves
   * signals to it (`signal` does not abort). Without it, `signal` aborting counts as SIGINT.
   */
  onSignal?: (listener: (signal: "SIGINT" | "SIGTERM") => void) => () => void;
  fetch?: FetchLike;
  WebSocket?: WebSocketConstructor;
  /** Use these instead of HTTP clients (tests, embedding). */
  claims?: ClaimsBackend;
  coordinator?: Coordinator;
}

export interface CommandContext {
  p: Printer;
  flags: Flags;
  /** Positional words after the command path. */
  args: string[];
  /** The words after `--`, if any: the command of `… run` (they are also the tail of `args`). */
  command: string[] | undefined;
  /** The environment (a `run` command's child inherits it). */
  env: Record<string, string | undefined>;
  signal: AbortSignal;
  /** Subscribe to SIGINT/SIGTERM (see {@link CliIo.onSignal}); returns the unsubscribe. */
  onSignal(listener: (signal: "SIGINT" | "SIGTERM") => void): () => void;
  claims(): Promise<ClaimsBackend>;
  coordinator(): Promise<Coordinator>;
}

export const DEFAULT_URL = "http://127.0.0.1:8787";
export const DEFAULT_NAMESPACE = "default";
/** Default time a `run` command's command may take to stop after SIGTERM on loss, before SIGKILL. */
export const DEFAULT_GRACE_MS = 5_000;
