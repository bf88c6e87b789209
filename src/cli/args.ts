/**
 * Command-line parsing for `shiftlock`: every option the tool knows, parsed once with the
 * repository's strict rule (./options.mjs, `node:util` `parseArgs`), then handed to each
 * command through {@link Flags}.
 *
 * Guarantees: an option no command knows (a typo) is a usage error before anything runs
 * (`unknown option --x`); one the command does not take is a usage error naming the
 * command, raised by `done()` before any request; missing or malformed values are usage
 * errors naming the option (exit status 2). Counters parse to bigint with the wire's
 * canonical rule, durations to integer milliseconds: each duration has two spellings,
 * `--ttl 15s` (with a unit) and `--ttl-ms 15000`, and giving both is a usage error.
 *
 * Does not: check that a required positional argument is present (the commands do).
 */
import { parseCounter } from "../protocol/counter.ts";
import {
  parseDuration,
  parseInteger,
  parseOptions,
  UsageError,
  type OptionSpec,
  type OptionValues,
} from "./options.mjs";

export { UsageError };

/** Every option of every command, by long name. Which command takes which: docs/cli.md. */
export const CLI_OPTIONS = {
  // global
  json: { type: "boolean" },
  help: { type: "boolean", short: "h" },
  version: { type: "boolean" },
  url: { type: "string" },
  token: { type: "string" },
  namespace: { type: "string" },
  // claims and generations
  generation: { type: "string" },
  ttl: { type: "string" },
  "ttl-ms": { type: "string" },
  "allow-empty-only": { type: "boolean" },
  "fencing-token": { type: "string" },
  "expected-token": { type: "string" },
  "operation-id": { type: "string" },
  "after-version": { type: "string" },
  from: { type: "string" },
  to: { type: "string" },
  service: { type: "string" },
  instance: { type: "string" },
  reason: { type: "string" },
  // generations keepalive
  once: { type: "boolean" },
  // claims evict, coord evict
  note: { type: "string" },
  // coord
  volume: { type: "string" },
  store: { type: "string" },
  key: { type: "string" },
  participant: { type: "string" },
  "after-generation": { type: "string" },
  wait: { type: "string" },
  "wait-ms": { type: "string" },
  root: { type: "string" },
  "expected-generation": { type: "string" },
  "key-prefix": { type: "string" },
  // claims run, coord run
  grace: { type: "string" },
  "grace-ms": { type: "string" },
  // claims list, generations list, coord scopes
  prefix: { type: "string" },
  phase: { type: "string" },
  owner: { type: "string" },
  state: { type: "string" },
  limit: { type: "string" },
} as const satisfies Record<string, OptionSpec>;

type CliOptions = typeof CLI_OPTIONS;
type OptionName = keyof CliOptions;
/** Options that take a value. */
export type StringOption = { [K in OptionName]: CliOptions[K]["type"] extends "string" ? K : never }[OptionName];
/** Options that are switches. */
export type BooleanOption = Exclude<OptionName, StringOption>;

/** Options every command accepts. */
const GLOBAL_OPTIONS: readonly OptionName[] = ["json", "help", "version", "url", "token", "namespace"];

/** The durations: each is `--<name> 15s` (with a unit) or `--<name>-ms 15000`. */
export type DurationOption = "ttl" | "wait" | "grace";

export interface ParsedArgs {
  /** Positional words: the command path, then its arguments. */
  words: string[];
  values: OptionValues<CliOptions>;
  /** The words after `--` (the tail of `words`), or undefined without `--`. */
  afterTerminator: string[] | undefined;
}

/** Parse a whole command line. Throws {@link UsageError}. */
export function parseCommandLine(argv: readonly string[]): ParsedArgs {
  const { values, positionals } = parseOptions(argv, CLI_OPTIONS, { allowPositionals: true });
  // Strict parsing never takes a bare `--` as an option's value, so the first one ends the options.
  const terminator = argv.indexOf("--");
  return { words: positionals, values, afterTerminator: terminator < 0 ? undefined : argv.slice(terminator + 1) };
}

/** Typed access to the options one command takes; `done()` rejects the rest. */
export class Flags {
  private readonly used = new Set<OptionName>(GLOBAL_OPTIONS);

  /** @param command the command path for messages, e.g. `claims get` */
  constructor(
    private readonly values: OptionValues<CliOptions>,
    private readonly command: string,
  ) {}

  string(name: StringOption): string | undefined {
    this.used.add(name);
    return this.values[name];
  }

  required(name: StringOption): string {
    const v = this.string(name);
    if (v === undefined || v === "") throw new UsageError(`--${name} is required`);
    return v;
  }

  bool(name: BooleanOption): boolean {
    this.used.add(name);
    return this.values[name] === true;
  }

  counter(name: StringOption): bigint | undefined {
    const v = this.string(name);
    if (v === undefined) return undefined;
    const n = parseCounter(v);
    if (n === undefined) throw new UsageError(`--${name} must be a decimal counter like 42 (got ${JSON.stringify(v)})`);
    return n;
  }

  requiredCounter(name: StringOption): bigint {
    const n = this.counter(name);
    if (n === undefined) throw new UsageError(`--${name} is required`);
    return n;
  }

  /** A page size for list commands, 1–500. */
  limit(): number | undefined {
    const n = parseInteger("--limit", this.string("limit"), { unit: "items per page" });
    if (n !== undefined && (n < 1 || n > 500)) throw new UsageError("--limit must be from 1 to 500");
    return n;
  }

  /** A duration in whole milliseconds, from `--<name> 15s` or `--<name>-ms 15000` (not both). */
  duration(name: DurationOption): number | undefined {
    const withUnit = parseDuration(`--${name}`, this.string(name));
    const ms = parseInteger(`--${name}-ms`, this.string(`${name}-ms`), { unit: "milliseconds" });
    if (withUnit !== undefined && ms !== undefined) throw new UsageError(`give --${name} or --${name}-ms, not both`);
    return withUnit ?? ms;
  }

  requiredDuration(name: DurationOption, why: string): number {
    const ms = this.duration(name);
    if (ms === undefined) throw new UsageError(`--${name} (or --${name}-ms) is required: ${why}`);
    return ms;
  }

  /** Throw for any option given that this command did not ask for. */
  done(): void {
    for (const name of Object.keys(this.values) as OptionName[]) {
      if (!this.used.has(name)) throw new UsageError(`--${name} is not an option of ${this.command}`);
    }
  }
}
