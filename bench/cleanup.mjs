/**
 * What a benchmark started is stopped, and what it created is removed, however the run
 * ends: at its normal end, on Ctrl-C (SIGINT), SIGTERM or SIGHUP, at its hard time limit,
 * or on an uncaught error.
 *
 * Each resource registers two ways to end it: `stop` (graceful, awaited: SIGTERM to a
 * process group and wait for it) and `kill` (synchronous, last resort: SIGKILL and remove the
 * directory), used on a second signal and at `process.exit`, when nothing async can run.
 * Resources end in the reverse order of registration.
 *
 * With {@link exitOnUncaught}, an error nobody caught — an uncaught exception, an unhandled
 * rejection, a top-level `await` that rejected — ends the run the same way, with one line
 * naming it (no stack) and exit status 1 (2 for a command-line mistake).
 *
 * Does not: survive SIGKILL of the benchmark itself (nothing can); the servers it starts lead
 * their own process groups, so the terminal's Ctrl-C reaches them only through this module.
 */
import { rmSync } from "node:fs";
import { USAGE_EXIT_STATUS, UsageError } from "../src/cli/options.mjs";

/** @typedef {{ name: string, stop: () => Promise<void>, kill: () => void }} Resource */

/** @type {Resource[]} */
const resources = [];
let installed = false;
let ending = false;
/** An error nobody caught arrived while the run was already ending: it cannot end with 0. */
let failedWhileEnding = false;

/**
 * Register something to end; returns a function that ends it now and unregisters it.
 * @param {Resource} resource
 * @returns {() => Promise<void>}
 */
export function track(resource) {
  installHandlers();
  resources.push(resource);
  return async () => {
    const i = resources.indexOf(resource);
    if (i < 0) return;
    resources.splice(i, 1);
    await resource.stop();
  };
}

/**
 * A temporary directory removed at the end of the run (or by the returned function).
 * @param {string} dir
 * @returns {() => Promise<void>}
 */
export function trackDir(dir) {
  const remove = () => rmSync(dir, { recursive: true, force: true });
  return track({ name: dir, stop: () => Promise.resolve(remove()), kill: remove });
}

/** Stop everything still registered, newest first; errors are reported, not thrown. */
export async function stopAll() {
  while (resources.length > 0) {
    const resource = /** @type {Resource} */ (resources.pop());
    try {
      await resource.stop();
    } catch (err) {
      console.error(`cleanup: ${resource.name}: ${err instanceof Error ? err.message : String(err)}`);
      resource.kill();
    }
  }
}

function killAll() {
  while (resources.length > 0) {
    const resource = /** @type {Resource} */ (resources.pop());
    try {
      resource.kill();
    } catch {
      // best effort: the process is exiting
    }
  }
}

/**
 * Stop everything, then exit with `code`.
 * @param {number} code
 * @returns {Promise<never>}
 */
export async function stopAllAndExit(code) {
  ending = true;
  await stopAll();
  process.exit(code === 0 && failedWhileEnding ? 1 : code);
}

/**
 * End the run after `ms` (stopping everything first), whatever it is doing.
 * @param {string} program named in the message
 * @param {number} ms
 */
export function hardLimit(program, ms) {
  installHandlers();
  setTimeout(() => {
    console.error(`${program}: hard limit of ${Math.round(ms / 60_000)} min reached, stopping`);
    void stopAllAndExit(1);
  }, ms).unref();
}

/**
 * End the run on the first error nobody caught: print what failed on ONE line (`program:
 * failed in WHERE: message`; the lines of a multi-line message, e.g. a server's output,
 * come before it), stop everything, exit 1 — or 2, with the message alone, for a
 * `UsageError`. What fails after it (requests cut off by the stopping) is not printed.
 * @param {string} program named in the line
 * @param {() => string} [where] what the run was doing (e.g. its phase), named in the line
 * @returns {(err: unknown) => void} the same ending, for a failure the caller finds itself
 *   (an event whose emitter swallows what its listeners throw)
 */
export function exitOnUncaught(program, where) {
  installHandlers();
  let reported = false;
  const fail = (/** @type {unknown} */ err) => {
    // Only the first: stopping the server then fails whatever was still waiting on it.
    if (reported) return;
    reported = true;
    if (err instanceof UsageError) {
      console.error(`${program}: ${err.message}`);
      killAll();
      process.exit(USAGE_EXIT_STATUS);
    }
    const [first, ...rest] = describeError(err).split("\n");
    if (rest.length > 0) console.error(rest.join("\n"));
    const at = where === undefined ? "" : ` in ${where()}`;
    console.error(`${program}: failed${at}: ${first}`);
    // A failure while a finished run stops is reported (and the exit status says it), not run twice.
    if (ending) failedWhileEnding = true;
    else void stopAllAndExit(1);
  };
  process.on("uncaughtException", fail);
  process.on("unhandledRejection", fail);
  return fail;
}

/**
 * An error's message, or what names it when the message is empty (an `AggregateError` of
 * connection attempts has none: its first error's message, and the code).
 * @param {unknown} err
 */
function describeError(err) {
  if (!(err instanceof Error)) return String(err);
  if (err.message !== "") return err.message;
  const code = /** @type {{ code?: unknown }} */ (err).code;
  const inner = err instanceof AggregateError && err.errors[0] instanceof Error ? `: ${err.errors[0].message}` : "";
  return `${err.name}${typeof code === "string" ? ` ${code}` : ""}${inner}`;
}

function installHandlers() {
  if (installed) return;
  installed = true;
  for (const [signal, code] of /** @type {const} */ ([
    ["SIGINT", 130],
    ["SIGTERM", 143],
    ["SIGHUP", 129],
  ])) {
    process.on(signal, () => {
      if (ending) {
        // A second signal: no more waiting.
        killAll();
        process.exit(code);
      }
      console.error(`\n${signal}: stopping the servers and removing temporary files…`);
      void stopAllAndExit(code);
    });
  }
  process.on("exit", killAll);
}
