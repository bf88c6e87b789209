/**
 * `startShiftlock()`: the real shiftlock server, in Miniflare, for a user's own tests in
 * Node — the packaged Worker bundle (the one `wrangler deploy` uploads) on a loopback port.
 *
 * Guarantees: every call starts a server of its own with empty in-memory state (nothing is
 * read from or written to disk, nothing shared between servers); it accepts the local
 * tokens of `npm start` unless told otherwise; `dispose()` stops workerd and may be called
 * more than once. The Worker's own log lines are dropped unless `verbose` is set.
 * Does not: bring Miniflare (it is the user's: an optional peer dependency, imported only
 * when a server starts) or serve `npm start`'s Node front (answers come straight from
 * Miniflare's entry; see docs/local-server.md for what the front adds).
 */
import type { Readable } from "node:stream";
import type * as MiniflareModule from "miniflare";
import type { ShiftlockWorkerOptions } from "./packaged-worker.ts";
import { shiftlockWorker } from "./packaged-worker.ts";

/** Options of {@link startShiftlock}. */
export interface StartShiftlockOptions extends ShiftlockWorkerOptions {
  /** Loopback port to listen on (default 0: a free one). */
  port?: number;
  /** Pass the Worker's output (one JSON line per write or refusal) to this process's. */
  verbose?: boolean;
}

/** A running server. `await using` disposes it. */
export interface RunningShiftlock extends AsyncDisposable {
  /** Its origin, e.g. `http://127.0.0.1:41234`: the client's `baseUrl`. */
  url: string;
  /** `fetch` against the server: a path such as `/healthz` is resolved against {@link url}. */
  fetch(input: string | URL | Request, init?: RequestInit): Promise<Response>;
  /** Stop the server; its state is gone. */
  dispose(): Promise<void>;
}

async function importMiniflare(): Promise<typeof MiniflareModule> {
  try {
    return await import("miniflare");
  } catch (err) {
    throw new Error("shiftlock/testing needs miniflare: npm install --save-dev miniflare", { cause: err });
  }
}

/**
 * Start a fresh shiftlock server.
 *
 * @example
 * const shiftlock = await startShiftlock();
 * const claims = new HttpClaimsBackend({ baseUrl: shiftlock.url, token: "dev-token", namespace: "test", WebSocket });
 * // … acquire, watch, release …
 * await claims.close();
 * await shiftlock.dispose();
 */
export async function startShiftlock(options: StartShiftlockOptions = {}): Promise<RunningShiftlock> {
  const { Miniflare } = await importMiniflare();
  const mf = new Miniflare({
    ...shiftlockWorker(options),
    host: "127.0.0.1",
    port: options.port ?? 0,
    handleRuntimeStdio(stdout: Readable, stderr: Readable) {
      if (options.verbose === true) {
        stdout.pipe(process.stdout);
        stderr.pipe(process.stderr);
      } else {
        stdout.resume();
        stderr.resume();
      }
    },
  });
  let url: string;
  try {
    url = (await mf.ready).origin;
  } catch (err) {
    await mf.dispose();
    throw err;
  }
  let disposed: Promise<void> | undefined;
  const dispose = (): Promise<void> => (disposed ??= mf.dispose());
  return {
    url,
    fetch: (input, init) => globalThis.fetch(typeof input === "string" ? new URL(input, url) : input, init),
    dispose,
    [Symbol.asyncDispose]: dispose,
  };
}
