/**
 * `shiftlock`: the command-line tool, a thin layer over the TypeScript client.
 *
 * Guarantees: `main(argv, io)` never exits the process and never throws; it prints to
 * `io` and returns the exit status ({@link EXIT_STATUS}: 0 ok, 1 refused by the service,
 * 2 usage mistake, 3 service unreachable, 5 service failed; `claims run` and `coord run`
 * return their command's status, or 4 when the lease was lost: docs/cli.md). `--json` makes
 * every output line one JSON object; `--version` prints the package version.
 * Connection settings come from flags, else `SHIFTLOCK_URL`, `SHIFTLOCK_TOKEN`,
 * `SHIFTLOCK_NAMESPACE`, else `http://127.0.0.1:8787`, no token, namespace `default`; a
 * URL without `http://` or `https://` is a usage mistake, before any request.
 */
import { readFileSync } from "node:fs";
// Types only from the client's public entry; the HTTP clients are imported lazily below.
import type { ClaimsBackend, Coordinator, WebSocketConstructor } from "../client/index.ts";
import { DEFAULT_LEASE_TTL_MS } from "../protocol/coord.ts";
import { Flags, parseCommandLine, UsageError } from "./args.ts";
import { claimsCommand, generationsCommand, noArgs, transferCommand } from "./claims-commands.ts";
import { coordCommand } from "./coord-commands.ts";
import { DEFAULT_GRACE_MS, DEFAULT_NAMESPACE, DEFAULT_URL, type CliIo, type CommandContext } from "./context.ts";
import { parseHttpUrl } from "./options.mjs";
import { EXIT_STATUS, print, printError, type Printer, type Target } from "./output.ts";

export type { CliIo };

const TTL = `${DEFAULT_LEASE_TTL_MS / 1000}s`;
const GRACE = `${DEFAULT_GRACE_MS / 1000}s`;

export const USAGE = `shiftlock — leases and fencing tokens on Cloudflare Durable Objects

usage: shiftlock <command> [arguments] [flags]

claims
  claims get <claim>
  claims list [--prefix P] [--phase PHASE] [--owner G] [--limit 100]   every claim, by name
  claims watch <claim> [--after-version N]                     stream until Ctrl-C
  claims evict <claim> [--note TEXT]                           end the owner's hold (admin token)
  claims acquire <claim> --generation G [--ttl ${TTL}] [--allow-empty-only]
  claims renew <claim> --generation G --fencing-token T --ttl D
  claims release <claim> --generation G --fencing-token T
  claims transfer prepare <claim> --from G --to G2 --fencing-token T [--ttl ${TTL}]
  claims transfer commit <claim> --from G --to G2 --expected-token T [--ttl ${TTL}]
  claims transfer abort <claim> --from G --to G2 --expected-token T
  claims run <claim> --generation G [--ttl ${TTL}] [--wait D] [--grace ${GRACE}] -- <command…>
                                     hold the claim while the command runs (env SHIFTLOCK_CLAIM,
                                     SHIFTLOCK_FENCING_TOKEN, SHIFTLOCK_GENERATION, SHIFTLOCK_FENCE_KEY)
  (every mutation also takes --operation-id ID: a retry with the same id is applied once)

generations
  generations register <id> --service S --instance I
  generations get <id>
  generations list [--service S] [--state STATE] [--limit 100]
  generations set-state <id> <state> [--reason TEXT]
  generations keepalive <id> [--ttl ${TTL}] [--once]                 keep its lease (the lease channel) until
                                     Ctrl-C, printing each deadline; --once: one keepalive
  generations end-lease <id>                                   end its lease now (its bound claims expire)

coord (scope: --volume V [--store S] [--key K] [--participant P])
  coord scopes [--volume V] [--limit 100]                      every scope of the namespace
  coord capability                                             (--store or --key)
  coord snapshot                                               (--store)
  coord watch [--after-generation N]                           (--store) stream until Ctrl-C
  coord lease [--ttl ${TTL}] [--wait D]                          hold with keepalive until Ctrl-C, then release
  coord publish [--root JSON] [--generation N] [--expected-generation N] [--key-prefix BASE64] [--wait D]
  coord evict [--note TEXT]                                    end the holder's lease (admin token)
  coord run [--ttl ${TTL}] [--wait D] [--grace ${GRACE}] -- <command…>
                                     hold the write lease while the command runs (env
                                     SHIFTLOCK_LEASE_EPOCH, SHIFTLOCK_LEASE_ID, SHIFTLOCK_FENCE_KEY)

whoami                                                         the token's name and role here

global flags
  --url URL          SHIFTLOCK_URL        (default ${DEFAULT_URL})
  --token TOKEN      SHIFTLOCK_TOKEN
  --namespace NS     SHIFTLOCK_NAMESPACE  (default ${DEFAULT_NAMESPACE})
  --json             one JSON object per output line; errors as the JSON envelope on stderr
  --help, -h
  --version          the package version

Options are --name VALUE or --name=VALUE (write --name=-x for a value that starts with "-");
an unknown option or one the command does not take is an error.
Durations take a unit: --ttl 500ms, 15s, 2m, 1h or 1m30s; or milliseconds as --ttl-ms 15000
(likewise --wait / --wait-ms, --grace / --grace-ms).

exit status: 0 ok, ${EXIT_STATUS.refused} refused by the service (the message names the code), ${EXIT_STATUS.usage} usage,
${EXIT_STATUS.unreachable} service unreachable (the message names the URL), ${EXIT_STATUS.failed} service failed (internal)
run: the command's status (signal n → 128+n), ${EXIT_STATUS.leaseLost} lease lost (command stopped: SIGTERM, SIGKILL
after --grace), 126/127 command not executable/not found, 128+n interrupted while waiting
`;

/** Run one command line. Never throws; returns the exit status. */
export async function main(argv: readonly string[], io: CliIo): Promise<number> {
  let json = argv.includes("--json");
  const p: Printer = {
    get json() {
      return json;
    },
    out: (line) => io.stdout(`${line}\n`),
    err: (line) => io.stderr(`${line}\n`),
  };
  const stop = new AbortController();
  const onAbort = (): void => stop.abort(io.signal?.reason);
  io.signal?.addEventListener("abort", onAbort, { once: true });
  const closers: (() => Promise<void>)[] = [];
  let target: Target | undefined;
  try {
    const { words, values, afterTerminator } = parseCommandLine(argv);
    json = values.json === true;
    if (values.version === true && values.help !== true) {
      io.stdout(`${packageVersion()}\n`);
      return EXIT_STATUS.ok;
    }
    if (values.help === true || words.length === 0) {
      io.stdout(USAGE);
      return values.help === true ? EXIT_STATUS.ok : EXIT_STATUS.usage;
    }
    target = {
      baseUrl:
        parseHttpUrl("--url", values.url) ?? parseHttpUrl("SHIFTLOCK_URL", io.env["SHIFTLOCK_URL"]) ?? DEFAULT_URL,
      namespace: values.namespace ?? io.env["SHIFTLOCK_NAMESPACE"] ?? DEFAULT_NAMESPACE,
    };
    const conn = {
      ...target,
      token: values.token ?? io.env["SHIFTLOCK_TOKEN"] ?? "",
      ...(io.fetch === undefined ? {} : { fetch: io.fetch }),
      // A one-shot command answers at once (an unreachable server exits 3 now, not after
      // retries); the long-running `run` retries through the client's one rule itself.
      retryForMs: 0,
    };
    let claims: ClaimsBackend | undefined = io.claims;
    let coordinator: Coordinator | undefined = io.coordinator;
    const ctx = (command: string, args: string[]): CommandContext => ({
      p,
      flags: new Flags(values, command),
      args,
      command: afterTerminator,
      env: io.env,
      signal: stop.signal,
      onSignal: (listener) => subscribeSignals(io, listener),
      async claims() {
        if (claims === undefined) {
          const { HttpClaimsBackend } = await import("../client/claims/http-claims-backend.ts");
          const WebSocket = await webSocket(io);
          const backend = new HttpClaimsBackend({ ...conn, ...(WebSocket === undefined ? {} : { WebSocket }) });
          closers.push(() => backend.close());
          claims = backend;
        }
        return claims;
      },
      async coordinator() {
        if (coordinator === undefined) {
          const { HttpCoordinator } = await import("../client/coord/coord-http.ts");
          const WebSocket = await webSocket(io);
          coordinator = new HttpCoordinator({ ...conn, ...(WebSocket === undefined ? {} : { WebSocket }) });
        }
        return coordinator;
      },
    });
    const [group, sub, ...rest] = words;
    if (group === "whoami") {
      const c = ctx("whoami", words.slice(1));
      noArgs(c);
      c.flags.done();
      const me = await (await c.claims()).whoami({ signal: stop.signal });
      if (p.json) print(p, me);
      else p.out(`${me.name} (${me.role}) in namespace ${target.namespace} at ${target.baseUrl}`);
      return EXIT_STATUS.ok;
    }
    if (sub === undefined) throw new UsageError(`${group} needs a command`);
    let status: number | undefined;
    if (group === "claims" && sub === "transfer") {
      const [step, ...args] = rest;
      if (step === undefined) throw new UsageError("claims transfer needs prepare, commit or abort");
      await transferCommand(step, ctx(`claims transfer ${step}`, args));
    } else if (group === "claims") {
      status = await claimsCommand(sub, ctx(`claims ${sub}`, rest));
    } else if (group === "generations") {
      await generationsCommand(sub, ctx(`generations ${sub}`, rest));
    } else if (group === "coord") {
      status = await coordCommand(sub, ctx(`coord ${sub}`, rest));
    } else {
      throw new UsageError(`unknown command ${JSON.stringify(group)}`);
    }
    return status ?? EXIT_STATUS.ok;
  } catch (err) {
    return printError(p, err, target);
  } finally {
    io.signal?.removeEventListener("abort", onAbort);
    for (const close of closers) await close().catch(() => undefined);
  }
}

/** The version in the package.json beside src/ (a clone) or lib/ (the installed package). */
function packageVersion(): string {
  const pkg = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as { version: string };
  return pkg.version;
}

/** The process's signals, or (embedded, tests) the abort of `io.signal` as one SIGINT. */
function subscribeSignals(io: CliIo, listener: (signal: "SIGINT" | "SIGTERM") => void): () => void {
  if (io.onSignal !== undefined) return io.onSignal(listener);
  const signal = io.signal;
  if (signal === undefined) return () => undefined;
  const onAbort = (): void => listener("SIGINT");
  if (signal.aborted) queueMicrotask(onAbort);
  else signal.addEventListener("abort", onAbort, { once: true });
  return () => signal.removeEventListener("abort", onAbort);
}

/** The injected WebSocket, the global one (Node ≥ 22, browsers), or the `ws` package. */
async function webSocket(io: CliIo): Promise<WebSocketConstructor | undefined> {
  if (io.WebSocket !== undefined) return io.WebSocket;
  if (typeof globalThis.WebSocket === "function") return undefined;
  try {
    const mod = (await import("ws")) as { default: unknown };
    return mod.default as WebSocketConstructor;
  } catch {
    return undefined; // watches then fail with a clear error from the client
  }
}
