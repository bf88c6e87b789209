/**
 * Where a thread's wall time goes, by sampling its scheduler state in /proc: running (R),
 * blocked in the kernel on I/O (D — an fsync, a disk write), or sleeping (S — waiting for
 * work in its event loop). bench/profile.mjs samples workerd's main thread, the one that runs
 * every isolate and, locally, commits every Durable Object's SQLite database.
 *
 * Guarantees: sampling reads one small file per tick (default every 2 ms) and never stops the
 * thread; a sample of a thread that has exited is dropped. Does not: tell an fsync from
 * another blocking call (the D state is "uninterruptible", which on this path is the disk),
 * or attribute a state to a request — shares are of wall time over the sampled window.
 */
import { readFileSync, readdirSync } from "node:fs";

/**
 * The state letter of /proc/…/stat (the field after the parenthesised command name).
 * @param {string} stat the file's text
 * @returns {string | undefined}
 */
export function statState(stat) {
  const close = stat.lastIndexOf(")");
  return close < 0 ? undefined : stat.charAt(close + 2) || undefined;
}

/**
 * The thread of `pid` whose name is `name` (workerd names its JavaScript thread after
 * itself; its helper threads are `tokio-rt-worker`, `V8 DefaultWorke…`, …). A thread
 * inherits its creator's name until it sets its own, so several may match: the main thread
 * (tid = pid) wins, then the lowest tid — never whichever `/proc` happens to list first.
 * @param {number} pid
 * @param {string} name
 * @returns {number | undefined}
 */
export function threadNamed(pid, name) {
  const tids = readdirSync(`/proc/${pid}/task`)
    .map(Number)
    .sort((a, b) => (a === pid ? -1 : b === pid ? 1 : a - b));
  for (const tid of tids) {
    try {
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, "utf8");
      if (stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")")) === name) return tid;
    } catch {
      // The thread exited between the listing and the read.
    }
  }
  return undefined;
}

/**
 * Sample `/proc/<pid>/task/<tid>/stat` every `everyMs` until `stop()`.
 * @param {number} pid
 * @param {number} tid
 * @param {number} [everyMs]
 * @returns {{ stop: () => { samples: number, percent: Record<string, number> } }}
 */
export function sampleThreadStates(pid, tid, everyMs = 2) {
  /** @type {Record<string, number>} */
  const counts = {};
  let samples = 0;
  const timer = setInterval(() => {
    let state;
    try {
      state = statState(readFileSync(`/proc/${pid}/task/${tid}/stat`, "utf8"));
    } catch {
      return;
    }
    if (state === undefined) return;
    counts[state] = (counts[state] ?? 0) + 1;
    samples++;
  }, everyMs);
  return {
    stop() {
      clearInterval(timer);
      const percent = Object.fromEntries(
        Object.entries(counts).map(([s, n]) => [s, Math.round((1000 * n) / Math.max(samples, 1)) / 10]),
      );
      return { samples, percent };
    },
  };
}
