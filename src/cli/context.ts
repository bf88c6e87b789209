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
  signal: AbortSignal;
  claims(): Promise<ClaimsBackend>;
  coordinator(): Promise<Coordinator>;
}

export const DEFAULT_URL = "http://127.0.0.1:8787";
export const DEFAULT_NAMESPACE = "default";
