// What a reader of the repository has: README, docs/, the examples and the sources' comments
// cite docs/protocol.md (or another doc), never the contract's private copy ("SPEC §n",
// ../shared), its seed files or issue numbers, none of which ship with the repository.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

const ROOTS = ["README.md", "docs", "examples", "src"];
const SKIP = /(^|\/)(node_modules|dist|lib)$/;
const TEXT = /\.(md|ts|mts|mjs|js|json|toml)$/;
const PRIVATE_REFERENCE = /\bSPEC\b|seeds\/|\b[Ii]ssue \d|\.\.\/shared/;

function files(path: string): string[] {
  if (TEXT.test(path)) return [path];
  if (SKIP.test(path)) return [];
  try {
    return readdirSync(path).flatMap((name) => files(join(path, name)));
  } catch {
    return [];
  }
}

describe("references a user of the repository can follow", () => {
  it("README, docs, examples and sources cite docs/protocol.md, not SPEC §n, seeds, issues or ../shared", () => {
    const offending = ROOTS.flatMap(files).flatMap((file) =>
      readFileSync(file, "utf8")
        .split("\n")
        .flatMap((line, i) => (PRIVATE_REFERENCE.test(line) ? [`${file}:${i + 1}: ${line.trim()}`] : [])),
    );
    expect(offending, "cite a docs/protocol.md section (e.g. docs/protocol.md#claim-rules) instead").toEqual([]);
  });

  it("every docs/protocol.md#section they cite is a heading of docs/protocol.md", () => {
    // GitHub's anchors: the heading in lower case, punctuation dropped, spaces as dashes.
    const anchors = new Set(
      [...readFileSync("docs/protocol.md", "utf8").matchAll(/^#+ (.+)$/gm)].map((m) =>
        m[1]!
          .toLowerCase()
          .replace(/[^a-z0-9 -]/g, "")
          .replaceAll(" ", "-"),
      ),
    );
    const cited = ROOTS.flatMap(files).flatMap((file) =>
      [...readFileSync(file, "utf8").matchAll(/protocol\.md#([a-z0-9-]+)((?:, #[a-z0-9-]+)*)/g)].flatMap((m) =>
        [m[1]!, ...[...m[2]!.matchAll(/#([a-z0-9-]+)/g)].map((n) => n[1]!)].map((anchor) => `${file}: #${anchor}`),
      ),
    );
    expect(cited.length).toBeGreaterThan(0);
    expect(cited.filter((c) => !anchors.has(c.slice(c.indexOf("#") + 1)))).toEqual([]);
  });
});
