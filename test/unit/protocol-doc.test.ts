// docs/protocol.md's route and error tables are generated from the declarations
// (protocol-doc-tables.ts): this fails when a route or a code changed and the document did
// not. `npm run docs:protocol` runs this file with `-u`, which rewrites the tables in place.
import { readFileSync } from "node:fs";
import { format, resolveConfig } from "prettier";
import { describe, expect, it } from "vitest";
import { ROUTES } from "../../src/protocol/routes.ts";
import { withGeneratedTables } from "./protocol-doc-tables.ts";

const DOC = "docs/protocol.md";

// Loading prettier and formatting the document takes seconds on a busy 2-core machine.
describe("docs/protocol.md", { timeout: 30_000 }, () => {
  it("has the route and error tables the declarations generate (npm run docs:protocol)", async () => {
    const doc = readFileSync(DOC, "utf8");
    const expected = await format(withGeneratedTables(doc), { ...(await resolveConfig(DOC)), filepath: DOC });
    await expect(expected).toMatchFileSnapshot(`../../${DOC}`);
  });

  it("generates a row for every declared route", () => {
    const rows = withGeneratedTables(readFileSync(DOC, "utf8"))
      .split("\n")
      .map((line) => line.split("|").map((cell) => cell.trim()));
    for (const route of ROUTES) {
      expect(rows.some((cells) => cells[1] === `\`${route.method}\`` && cells[2] === `\`${route.path}\``)).toBe(true);
    }
  });
});
