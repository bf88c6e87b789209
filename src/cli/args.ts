/**
 * Command-line parsing for `shiftlock`: positional words and `--flag value` /
 * `--flag=value` / boolean `--flag`, with no dependency.
 *
 * Guarantees: unknown flags and missing or malformed values are usage errors
 * (`UsageError`, exit status 2) that name the flag; counters parse to bigint with the
 * wire's canonical rule, durations to integer milliseconds.
 */
import { parseCounter } from "../protocol/counter.ts";

/** A mistake in the command line itself (exit status 2). */
export class UsageError extends Error {
  override readonly name = "UsageError";
}

export interface ParsedArgs {
  words: string[];
  flags: Map<string, string | true>;
}

/** Flags that never take a value. */
const BOOLEAN_FLAGS = new Set(["json", "help", "allow-empty-only"]);

export function parseArgs(argv: readonly string[]): ParsedArgs {
  const words: string[] = [];
  const flags = new Map<string, string | true>();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === "--") {
      words.push(...argv.slice(i + 1));
      break;
    }
    if (arg === "-h") {
      flags.set("help", true);
      continue;
    }
    if (!arg.startsWith("--")) {
      words.push(arg);
      continue;
    }
    const eq = arg.indexOf("=");
    const name = eq === -1 ? arg.slice(2) : arg.slice(2, eq);
    if (BOOLEAN_FLAGS.has(name)) {
      if (eq !== -1) throw new UsageError(`--${name} takes no value`);
      flags.set(name, true);
      continue;
    }
    const value = eq === -1 ? argv[++i] : arg.slice(eq + 1);
    if (value === undefined) throw new UsageError(`--${name} needs a value`);
    flags.set(name, value);
  }
  return { words, flags };
}

/** Typed access to the flags a command allows; `done()` rejects the rest. */
export class Flags {
  private readonly used = new Set<string>(["json", "help", "url", "token", "namespace"]);

  constructor(private readonly parsed: ParsedArgs) {}

  string(name: string): string | undefined {
    this.used.add(name);
    const v = this.parsed.flags.get(name);
    return v === true ? undefined : v;
  }

  required(name: string): string {
    const v = this.string(name);
    if (v === undefined || v === "") throw new UsageError(`--${name} is required`);
    return v;
  }

  bool(name: string): boolean {
    this.used.add(name);
    return this.parsed.flags.get(name) === true;
  }

  counter(name: string): bigint | undefined {
    const v = this.string(name);
    if (v === undefined) return undefined;
    const n = parseCounter(v);
    if (n === undefined) throw new UsageError(`--${name} must be a decimal counter like 42 (got ${JSON.stringify(v)})`);
    return n;
  }

  requiredCounter(name: string): bigint {
    const n = this.counter(name);
    if (n === undefined) throw new UsageError(`--${name} is required`);
    return n;
  }

  ms(name: string): number | undefined {
    const v = this.string(name);
    if (v === undefined) return undefined;
    if (!/^\d+$/.test(v))
      throw new UsageError(`--${name} must be a whole number of milliseconds (got ${JSON.stringify(v)})`);
    return Number(v);
  }

  /** Throw for any flag the command did not ask for. */
  done(): void {
    for (const name of this.parsed.flags.keys()) {
      if (!this.used.has(name)) throw new UsageError(`unknown flag --${name}`);
    }
  }
}
