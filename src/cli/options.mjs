/**
 * The one command-line rule of this repository, shared by the `shiftlock` CLI
 * (src/cli/args.ts), the benchmark (bench/options.mjs) and the demo (demo/options.ts):
 * `node:util` `parseArgs` in strict mode, plus the parsing of numbers, choices and server URLs.
 *
 * Guarantees: an unknown option (a typo included), a missing value, a value given to a
 * boolean option, an unexpected positional argument, a malformed number, an unknown
 * choice or a server URL without `http://` or `https://` is a {@link UsageError} whose
 * message names the option (`unknown option --x`,
 * `--ttl-ms must be an integer …`); an unknown option close to a known one names it
 * (`unknown option --ttl-msx (did you mean --ttl-ms?)`), and a usage mistake ends a process with status
 * {@link USAGE_EXIT_STATUS} (2). Options are `--name value`, `--name=value` or a declared
 * short alias (`-h`); a value that starts with `-` must be written `--name=-value`; `--`
 * ends the options. Numbers are plain decimal digits only (no sign, exponent or
 * whitespace) and safe integers unless a decimal is asked for. A duration with a unit
 * ({@link parseDuration}) is `500ms`, `15s`, `2m`, `1h` or a sum such as `1m30s`, and comes
 * out as whole milliseconds.
 *
 * Does not: read the environment, print anything except in {@link parseOrExit}, or know
 * which options a given command takes (callers declare their own tables).
 *
 * Plain JavaScript with JSDoc types (type-checked by tsc with checkJs) so the benchmark
 * can import it with plain `node`, without the TypeScript loader.
 */
import { parseArgs } from "node:util";

/** Exit status of a usage mistake, for every entry point. */
export const USAGE_EXIT_STATUS = 2;

/** A mistake in the command line itself (exit status {@link USAGE_EXIT_STATUS}). */
export class UsageError extends Error {
  /** @override */
  name = "UsageError";
}

/**
 * One option: a string value or a boolean switch, with an optional one-letter alias.
 * @typedef {{ type: "string" | "boolean", short?: string }} OptionSpec
 */

/**
 * What {@link parseOptions} returns for a table `O`: each option given, by long name;
 * options not given are absent (defaults are the caller's, applied with `??`).
 * @template {Record<string, OptionSpec>} O
 * @typedef {{ -readonly [K in keyof O]?: O[K]["type"] extends "boolean" ? boolean : string }} OptionValues
 */

/**
 * Parse `argv` against the table `options` with `node:util` `parseArgs` (strict).
 *
 * @example
 *   const { values } = parseOptions(["--ttl-ms", "500"], { "ttl-ms": { type: "string" } });
 *   values["ttl-ms"]; // "500"
 * @template {Record<string, OptionSpec>} O
 * @param {readonly string[]} argv the arguments after the program (e.g. `process.argv.slice(2)`)
 * @param {O} options every option the program accepts
 * @param {{ allowPositionals?: boolean }} [config] positional words are errors unless allowed
 * @returns {{ values: OptionValues<O>, positionals: string[] }}
 * @throws {UsageError} for anything `parseArgs` rejects, with a message naming the option
 */
export function parseOptions(argv, options, config = {}) {
  const allowPositionals = config.allowPositionals ?? false;
  try {
    const { values, positionals } = parseArgs({ args: argv, options, strict: true, allowPositionals });
    return { values: /** @type {OptionValues<O>} */ (/** @type {unknown} */ (values)), positionals };
  } catch (err) {
    if (!isParseArgsError(err)) throw err;
    throw new UsageError(explain(argv, options, allowPositionals) ?? err.message);
  }
}

/**
 * @param {unknown} err
 * @returns {err is Error & { code: string }}
 */
function isParseArgsError(err) {
  if (!(err instanceof Error) || !("code" in err)) return false;
  return typeof err.code === "string" && err.code.startsWith("ERR_PARSE_ARGS_");
}

/**
 * Say in one short sentence what strict parsing refused (node's own messages are long):
 * re-read the arguments leniently and report the first offending token.
 * @param {readonly string[]} argv
 * @param {Record<string, OptionSpec>} options
 * @param {boolean} allowPositionals
 * @returns {string | undefined} undefined when the cause is not recognised
 */
function explain(argv, options, allowPositionals) {
  const { tokens } = parseArgs({ args: argv, options, strict: false, allowPositionals: true, tokens: true });
  for (const token of tokens) {
    if (token.kind === "positional" && !allowPositionals) return `unexpected argument ${JSON.stringify(token.value)}`;
    if (token.kind !== "option") continue;
    const spec = Object.hasOwn(options, token.name) ? options[token.name] : undefined;
    if (spec === undefined) return `unknown option ${token.rawName}${suggestion(token.name, Object.keys(options))}`;
    if (spec.type === "boolean" && token.value !== undefined) return `${token.rawName} takes no value`;
    if (spec.type === "string" && token.value === undefined) return `${token.rawName} needs a value`;
    if (spec.type === "string" && token.value?.startsWith("-") === true && token.inlineValue === false) {
      return `${token.rawName} needs a value (write ${token.rawName}=${token.value} for one that starts with "-")`;
    }
  }
  return undefined;
}

/**
 * ` (did you mean --x?)` for the known option nearest to an unknown `name`, or "" when none
 * is close (at most 2 edits, and fewer than half the name's letters).
 * @param {string} name
 * @param {readonly string[]} known
 * @returns {string}
 */
export function suggestion(name, known) {
  let best = "";
  let bestDistance = Math.min(3, Math.ceil(name.length / 2));
  for (const candidate of known) {
    const d = editDistance(name, candidate);
    if (d < bestDistance) [best, bestDistance] = [candidate, d];
  }
  return best === "" ? "" : ` (did you mean --${best}?)`;
}

/**
 * Edits (insert, delete, substitute, swap two neighbours) that turn `a` into `b`: the
 * optimal-string-alignment distance, so the typo `--jsno` is one edit from `--json`.
 * @param {string} a
 * @param {string} b
 * @returns {number}
 */
function editDistance(a, b) {
  /** @type {number[][]} */
  const d = Array.from({ length: a.length + 1 }, (_, i) => [i, ...Array.from({ length: b.length }, () => 0)]);
  const at = (/** @type {number} */ i, /** @type {number} */ j) => d[i]?.[j] ?? Number.POSITIVE_INFINITY;
  for (let j = 1; j <= b.length; j++) /** @type {number[]} */ (d[0])[j] = j;
  for (let i = 1; i <= a.length; i++) {
    const row = /** @type {number[]} */ (d[i]);
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      row[j] = Math.min(at(i - 1, j) + 1, at(i, j - 1) + 1, at(i - 1, j - 1) + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        row[j] = Math.min(at(i, j), at(i - 2, j - 2) + 1);
    }
  }
  return at(a.length, b.length);
}

/** Milliseconds per duration unit. */
const DURATION_UNITS = /** @type {const} */ ({ ms: 1, s: 1_000, m: 60_000, h: 3_600_000 });

/**
 * A duration with units: `undefined` when absent, else whole milliseconds. Accepts one or
 * more `<number><unit>` parts (`500ms`, `15s`, `2m`, `1h`, `1.5s`, `1m30s`) with units `ms`,
 * `s`, `m`, `h`; a bare number is refused (it would be ambiguous: `--x-ms` takes those).
 *
 * @example parseDuration("--ttl", "15s") // 15000
 * @param {string} label how the message names it, e.g. `--ttl`
 * @param {string | undefined} text the raw value
 * @returns {number | undefined}
 * @throws {UsageError} `--ttl must be a duration such as 15s …` when malformed, not whole
 *   milliseconds or beyond `Number.MAX_SAFE_INTEGER`
 */
export function parseDuration(label, text) {
  if (text === undefined) return undefined;
  const part = /(\d+(?:\.\d+)?)(ms|s|m|h)/gy;
  let total = 0;
  let end = 0;
  let whole = true;
  for (let match = part.exec(text); match !== null; match = part.exec(text)) {
    const [, amount, unit] = /** @type {[string, string, keyof typeof DURATION_UNITS]} */ (
      /** @type {unknown} */ (match)
    );
    const ms = Number(amount) * DURATION_UNITS[unit];
    whole &&= Math.abs(ms - Math.round(ms)) < 1e-6; // 1.1s is 1100.0000000000002 in floating point
    total += Math.round(ms);
    end = part.lastIndex;
  }
  if (/^\d+$/.test(text)) throw new UsageError(`${label} needs a unit (ms, s, m or h), e.g. ${text}s; got ${text}`);
  if (text === "" || end !== text.length || !whole || !Number.isSafeInteger(total)) {
    throw new UsageError(
      `${label} must be a duration such as 500ms, 15s, 2m or 1h (whole milliseconds), got ${JSON.stringify(text)}`,
    );
  }
  return total;
}

/**
 * @typedef {object} NumberRange
 * @property {number} [min] smallest accepted value (default 0)
 * @property {number} [max] largest accepted value (default `Number.MAX_SAFE_INTEGER`)
 * @property {string} [unit] named in the message, e.g. "milliseconds"
 */

/**
 * An integer option: `undefined` when absent, else digits only, within the range.
 *
 * @example parseInteger("--ttl-ms", values["ttl-ms"], { unit: "milliseconds" }) ?? 15_000
 * @param {string} label how the message names it, e.g. `--ttl-ms`
 * @param {string | undefined} text the raw value
 * @param {NumberRange} [range]
 * @returns {number | undefined}
 * @throws {UsageError} `--ttl-ms must be an integer …` when malformed or out of range
 */
export function parseInteger(label, text, range = {}) {
  return parseNumeric(label, text, range, /^\d+$/, "an integer");
}

/**
 * A number option that may have a fraction (`0.5`): as {@link parseInteger} otherwise.
 * @param {string} label
 * @param {string | undefined} text
 * @param {NumberRange} [range]
 * @returns {number | undefined}
 */
export function parseDecimal(label, text, range = {}) {
  return parseNumeric(label, text, range, /^\d+(\.\d+)?$/, "a number");
}

/**
 * @param {string} label
 * @param {string | undefined} text
 * @param {NumberRange} range
 * @param {RegExp} shape
 * @param {string} kind
 */
function parseNumeric(label, text, { min = 0, max = Number.MAX_SAFE_INTEGER, unit }, shape, kind) {
  if (text === undefined) return undefined;
  const value = Number(text);
  if (!shape.test(text) || value < min || value > max) {
    const bounds = max === Number.MAX_SAFE_INTEGER ? `≥ ${min}` : `from ${min} to ${max}`;
    const unitText = unit === undefined ? "" : ` (${unit})`;
    throw new UsageError(`${label} must be ${kind} ${bounds}${unitText}, got ${JSON.stringify(text)}`);
  }
  return value;
}

/**
 * A server URL option: `undefined` when absent, else an absolute `http://` or `https://`
 * URL, returned as given. `localhost:8787` (no scheme) is refused, not read as a URL whose
 * scheme is `localhost:`.
 *
 * @example parseHttpUrl("--url", values.url) ?? "http://127.0.0.1:8787"
 * @param {string} label how the message names it, e.g. `--url` or `SHIFTLOCK_URL`
 * @param {string | undefined} text the raw value
 * @returns {string | undefined}
 * @throws {UsageError} `--url must be an http:// or https:// URL …` (suggesting `http://` when
 *   the value looks like `host:port`)
 */
export function parseHttpUrl(label, text) {
  if (text === undefined) return undefined;
  /** @type {URL | undefined} */
  let url;
  try {
    url = new URL(text);
  } catch {
    url = undefined;
  }
  if (url === undefined || (url.protocol !== "http:" && url.protocol !== "https:") || url.host === "") {
    const hint = /^[\w.-]+:\d+(\/|$)/.test(text) ? ` (did you mean http://${text}?)` : "";
    throw new UsageError(
      `${label} must be an http:// or https:// URL such as http://127.0.0.1:8787, got ${JSON.stringify(text)}${hint}`,
    );
  }
  return text;
}

/**
 * One of a fixed set of words: `undefined` when absent.
 * @example parseChoice("--server", values.server, ["wrangler-dev", "miniflare"]) ?? "wrangler-dev"
 * @template {string} C
 * @param {string} label
 * @param {string | undefined} text
 * @param {readonly C[]} choices
 * @returns {C | undefined}
 * @throws {UsageError} naming the accepted words
 */
export function parseChoice(label, text, choices) {
  if (text === undefined) return undefined;
  const found = choices.find((c) => c === text);
  if (found === undefined) {
    throw new UsageError(`${label} must be one of ${choices.join(", ")}, got ${JSON.stringify(text)}`);
  }
  return found;
}

/**
 * For scripts: run `parse`; with `--help` print `usage` and exit 0, on a usage mistake
 * print `<program>: <message>` and `usage` to stderr and exit {@link USAGE_EXIT_STATUS}.
 * Anything else `parse` throws propagates.
 *
 * @example const opts = parseOrExit("demo", DEMO_USAGE, () => parseDemoArgs(process.argv.slice(2)));
 * @template {{ help: boolean }} T
 * @param {string} program
 * @param {string} usage ends with a newline
 * @param {() => T} parse
 * @returns {T}
 */
export function parseOrExit(program, usage, parse) {
  let parsed;
  try {
    parsed = parse();
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    process.stderr.write(`${program}: ${err.message}\n\n${usage}`);
    process.exit(USAGE_EXIT_STATUS);
  }
  if (parsed.help) {
    process.stdout.write(usage);
    process.exit(0);
  }
  return parsed;
}
