/**
 * What every benchmark records next to its figures, and how it writes them into
 * docs/BENCHMARKS.md: the machine (cores, CPU model, RAM, Node, kernel, load, the disk's
 * fsync cost where the state lives), the commit measured, and generated sections between
 * `<!-- bench:begin:TAG -->` and `<!-- bench:end:TAG -->` markers.
 *
 * Guarantees: a doc section is replaced only between its own markers (hand-written analysis
 * around it is kept); a missing marker is an error, never an append somewhere else. The
 * commit says "(with uncommitted changes)" when the measured code differs from it (the
 * benchmark's own outputs excepted). Does not judge whether the machine was quiet: it
 * records the load so the reader can.
 */
import { execFileSync } from "node:child_process";
import { closeSync, fsyncSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync, writeSync } from "node:fs";
import { cpus, loadavg, release, tmpdir, totalmem } from "node:os";
import { join } from "node:path";
import { round } from "./stats.mjs";

export const DOC_FILE = "docs/BENCHMARKS.md";

/**
 * Milliseconds per synchronous 4 KiB write + fsync where the servers keep their state (the
 * temporary directory): every durable commit of a Durable Object, etcd or Redis pays at least
 * one of these.
 */
export function fsyncMs(samples = 50) {
  const dir = mkdtempSync(join(tmpdir(), "shiftlock-fsync-"));
  try {
    const fd = openSync(join(dir, "probe"), "w");
    const block = Buffer.alloc(4096, 1);
    const t0 = performance.now();
    for (let i = 0; i < samples; i++) {
      writeSync(fd, block, 0, block.length, i * block.length);
      fsyncSync(fd);
    }
    const ms = (performance.now() - t0) / samples;
    closeSync(fd);
    return round(ms, 2);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** @returns {number} the 1-minute load average, one decimal */
export function load1m() {
  return round(loadavg()[0] ?? 0, 1);
}

/**
 * @typedef {object} Machine
 * @property {number} nproc
 * @property {string} cpu model name from /proc/cpuinfo
 * @property {number} memoryGiB
 * @property {string} node
 * @property {string} os
 * @property {string} stateDir
 * @property {number} fsyncMsPer4KiB
 * @property {number} loadAvg1mAtStart
 */

/** @returns {Machine} */
export function machineInfo() {
  return {
    nproc: cpus().length,
    cpu: cpus()[0]?.model ?? "unknown",
    memoryGiB: round(totalmem() / 2 ** 30, 1),
    node: process.version,
    os: `${process.platform} ${release()}`,
    stateDir: tmpdir(),
    fsyncMsPer4KiB: fsyncMs(),
    loadAvg1mAtStart: load1m(),
  };
}

/** @param {Machine} m one sentence for the doc */
export function describeMachine(m) {
  return `${m.nproc} cores (${m.cpu}), ${m.memoryGiB} GiB, Node ${m.node}, ${m.os}; load average ${m.loadAvg1mAtStart} at the start. State in \`${m.stateDir}\` (one synchronous 4 KiB write + fsync there: ${m.fsyncMsPer4KiB} ms)`;
}

/** @returns {string} short HEAD, with a note when the measured code has uncommitted changes */
export function commitInfo() {
  try {
    const head = execFileSync("git", ["rev-parse", "--short", "HEAD"]).toString().trim();
    // The runs' own outputs (this doc, the results, the chart) do not make the code dirty.
    const status = [
      "status",
      "--porcelain",
      "--untracked-files=no",
      "--",
      ".",
      `:!${DOC_FILE}`,
      ":!docs/soak-memory.svg",
      ":!bench/results",
    ];
    const dirty = execFileSync("git", status).toString().trim() !== "";
    return dirty ? `${head} (with uncommitted changes)` : head;
  } catch {
    return "unknown";
  }
}

/**
 * Replace the generated section `tag` of docs/BENCHMARKS.md with `body`.
 * @param {string} tag
 * @param {string} body markdown, without the markers
 */
export function writeDocSection(tag, body) {
  replaceSection(DOC_FILE, `<!-- bench:begin:${tag} -->`, `<!-- bench:end:${tag} -->`, body);
  console.log(`updated ${DOC_FILE} (${tag})`);
}

/**
 * Replace what lies between the markers `begin` and `end` of a markdown file with `body`,
 * then leave the file as prettier would (the repository's format check covers docs/).
 * @param {string} file
 * @param {string} begin
 * @param {string} end
 * @param {string} body markdown, without the markers
 */
export function replaceSection(file, begin, end, body) {
  const doc = readFileSync(file, "utf8");
  const i = doc.indexOf(begin);
  const j = doc.indexOf(end);
  if (i < 0 || j < 0) throw new Error(`${file} has no "${begin}" … "${end}" section`);
  writeFileSync(file, `${doc.slice(0, i)}${begin}\n\n${body.trim()}\n\n${end}${doc.slice(j + end.length)}`);
  execFileSync("npx", ["prettier", "--log-level", "warn", "--write", file], { stdio: "inherit" });
}

/**
 * A markdown table.
 * @param {string[]} header
 * @param {(string | number)[][]} rows
 * @param {string} [align] one character per column: `l` or `r`
 */
export function markdownTable(header, rows, align = "") {
  const sep = header.map((_, i) => (align[i] === "r" ? "---:" : "---"));
  return [header, sep, ...rows]
    .map((r) => `| ${r.map((c) => String(c).replaceAll("|", "/")).join(" | ")} |`)
    .join("\n");
}
