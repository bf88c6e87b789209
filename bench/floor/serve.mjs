/**
 * Serve the floor Worker (bench/floor/worker.js) for bench:peers: the same Miniflare and
 * workerd as `npm start`, the same compatibility date, SQLite-backed objects persisted in a
 * fresh temporary directory (under $TMPDIR, so `TMPDIR=/dev/shm` puts it on tmpfs like
 * shiftlock's), reached on workerd's own socket — no front, as a Workers user's own lock
 * would be reached on Cloudflare.
 *
 * Guarantees: `stop()` (and Ctrl-C, the hard limit: bench/cleanup.mjs) disposes workerd and
 * removes the directory. Does not build anything: the Worker is plain JavaScript.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Miniflare } from "miniflare";
import { track } from "../cleanup.mjs";

/** @returns {Promise<{ url: string, stop: () => Promise<void> }>} */
export async function startFloor() {
  const dir = mkdtempSync(join(tmpdir(), "shiftlock-bench-floor-"));
  const mf = new Miniflare({
    name: "floor",
    modules: true,
    scriptPath: fileURLToPath(new URL("./worker.js", import.meta.url)),
    compatibilityDate: "2026-04-26",
    durableObjects: { LOCKS: { className: "Lock", useSQLite: true } },
    defaultPersistRoot: dir,
    durableObjectsPersist: true,
    host: "127.0.0.1",
    port: 0,
    unsafeDirectSockets: [{ host: "127.0.0.1", port: 0 }],
  });
  let stopped = false;
  const stop = track({
    name: "floor Worker (Miniflare)",
    stop: async () => {
      if (stopped) return;
      stopped = true;
      await mf.dispose();
      rmSync(dir, { recursive: true, force: true });
    },
    kill: () => rmSync(dir, { recursive: true, force: true }),
  });
  await mf.ready;
  const url = (await mf.unsafeGetDirectURL()).origin;
  return { url, stop };
}
