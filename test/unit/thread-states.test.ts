// How bench/profile.mjs tells running from blocked-on-disk from idle for workerd's thread:
// the state letter of /proc/…/stat, read past a command name that may itself hold ") ".
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { sampleThreadStates, statState, threadNamed } from "../../bench/thread-states.mjs";

describe("thread states", () => {
  it("reads the state after the command name, even a name with spaces and parentheses", () => {
    expect(statState("4242 (workerd) D 4200 4200 4200 0 -1")).toBe("D");
    expect(statState("17 (V8 DefaultWorke) S 1 1 1")).toBe("S");
    expect(statState("9 (a) b) R 1 1 1")).toBe("R");
    expect(statState("garbage")).toBeUndefined();
  });

  it("finds this process's own main thread by name and samples it as running", async () => {
    // Node's threads all inherit the process's name ("node"); setting the title renames the
    // main thread alone, so the name is this thread's for certain (the test runner may rename
    // the process at any time, which made reading the name first racy).
    const title = process.title;
    process.title = "sl-thread-probe";
    try {
      expect(readFileSync(`/proc/${process.pid}/comm`, "utf8").trim()).toBe("sl-thread-probe");
      expect(threadNamed(process.pid, "sl-thread-probe")).toBe(process.pid);
    } finally {
      process.title = title;
    }
    expect(threadNamed(process.pid, "no such thread")).toBeUndefined();
    const sampler = sampleThreadStates(process.pid, process.pid, 1);
    // The sampler runs on this thread, so every sample it takes sees it running.
    await new Promise((resolve) => setTimeout(resolve, 30));
    const { samples, percent } = sampler.stop();
    expect(samples).toBeGreaterThan(0);
    expect(percent).toEqual({ R: 100 });
  });
});
