/**
 * The demo's command line (`npm run demo -- [options]`), parsed with the repository's one
 * strict rule (src/cli/options.mjs) as a pure function, so tests can check it without
 * starting the demo.
 *
 * Guarantees: a typo'd or unknown option, a missing value, a malformed `--claims` or a
 * `--url` without `http://` or `https://` is a `UsageError` (the demo then exits 2 before
 * connecting anywhere). Does not read the
 * environment: `$SHIFTLOCK_URL` and `$SHIFTLOCK_TOKEN` are applied by demo/run.ts.
 */
import { parseChoice, parseHttpUrl, parseInteger, parseOptions } from "../src/cli/options.mjs";
import { parseRttMs } from "../bench/options.mjs";

export const DEMO_USAGE = `usage: npm run demo -- [options]

  --claims N    claims handed from generation A to B (default 4)
  --url URL     server to use (default $SHIFTLOCK_URL, else http://127.0.0.1:8787; when none
                answers, a private local server is started like npm start)
  --rtt-ms MS   put both generations behind a loopback relay adding this round trip
                (bench/wan-relay.mjs; the server stays local); refuses to run when the
                measured RTT is more than 2 ms off
  --drain WHEN  before-commit (default: A keeps working while its claims are only
                prepared, then drains and commits) or before-prepare (drain, prepare,
                commit: handoffTo's default)
  --unbound     each claim keeps a ttl of its own and renews it (bound: false); default:
                the claims are bound to each generation's lease, one keepalive for all
  --help, -h

The token is $SHIFTLOCK_TOKEN, else dev-token. The last line of the output is JSON:
{"claims":N,"rttMs":…,"gapMs":…,"staleWritesRejected":…}
`;

export interface DemoOptions {
  help: boolean;
  /** How many claims generation A owns and hands to B. */
  claims: number;
  /** The server; undefined: $SHIFTLOCK_URL or the default. */
  url: string | undefined;
  /** Round trip the WAN relay models; undefined: no relay. */
  rttMs: number | undefined;
  /** When generation A drains its work during the handoff. */
  drain: "before-commit" | "before-prepare";
  /** Claims bound to each generation's lease (the default) or each with its own ttl. */
  bound: boolean;
}

/**
 * @param argv the arguments after `demo/run.ts`
 * @throws {UsageError}
 */
export function parseDemoArgs(argv: readonly string[]): DemoOptions {
  const { values } = parseOptions(argv, {
    claims: { type: "string" },
    url: { type: "string" },
    "rtt-ms": { type: "string" },
    drain: { type: "string" },
    unbound: { type: "boolean" },
    help: { type: "boolean", short: "h" },
  });
  return {
    help: values.help === true,
    claims: parseInteger("--claims", values.claims, { min: 1 }) ?? 4,
    url: parseHttpUrl("--url", values.url),
    rttMs: parseRttMs(values["rtt-ms"]),
    drain: parseChoice("--drain", values.drain, ["before-commit", "before-prepare"] as const) ?? "before-commit",
    bound: values.unbound !== true,
  };
}
