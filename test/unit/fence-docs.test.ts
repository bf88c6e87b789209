// docs/fencing.md's examples are code the tests run: each block marked
// `<!-- example: NAME (FILE) -->` must equal the `// example:start NAME` region of FILE
// (both formatted by prettier), and the Node examples run here.
import { readFileSync } from "node:fs";
import { format, resolveConfig } from "prettier";
import { describe, expect, it, vi } from "vitest";
import { MemoryFence, ensureSqliteFence, sqliteFenceAccepted } from "../../src/client/fence/index.ts";
import { honoExample, memoryExample, sqliteExample } from "../fence/doc-examples.ts";
import { openSqlJs, sqlJsExecutor } from "../fence/sql-js.ts";

const DOC = readFileSync("docs/fencing.md", "utf8");

async function normalized(code: string): Promise<string> {
  const options = (await resolveConfig("docs/fencing.md")) ?? {};
  return format(code, { ...options, parser: "typescript" });
}

function region(file: string, name: string): string {
  const text = readFileSync(file, "utf8");
  const match = new RegExp(`// example:start ${name}\\n([\\s\\S]*?)\\n\\s*// example:end`).exec(text);
  if (match === null) throw new Error(`${file} has no example region ${name}`);
  return match[1]!;
}

const blocks = [...DOC.matchAll(/<!-- example: ([\w-]+) \(([^)]+)\) -->\n\n```ts\n([\s\S]*?)```/g)].map((m) => ({
  name: m[1]!,
  file: m[2]!,
  code: m[3]!,
}));

describe("docs/fencing.md examples", () => {
  it("cover every fence", () => {
    expect(blocks.map((b) => b.name).sort()).toEqual([
      "d1",
      "durable-object",
      "hono",
      "memory",
      "postgres",
      "r2",
      "sqlite",
    ]);
  });

  it.each(blocks)("$name is the code of $file", async ({ name, file, code }) => {
    expect(await normalized(code)).toBe(await normalized(region(file, name)));
  });

  it("memory: the owner writes, the stale owner is refused", () => {
    const warn = vi.spyOn(console, "warn").mockImplementation(() => undefined);
    const ledger = memoryExample(
      { fence: { key: "prod/claims/c", token: 2n } },
      { fence: { key: "prod/claims/c", token: 1n } },
    );
    expect(ledger).toEqual(["written by the owner"]);
    expect(warn).toHaveBeenCalledWith("refused: prod/claims/c presented 1, accepted 2");
    warn.mockRestore();
  });

  it("sqlite: writes under the fence, and a lower token writes nothing", async () => {
    const db = await openSqlJs();
    db.run("CREATE TABLE ledger (entry TEXT)");
    sqliteExample(db, { fence: { key: "k", token: 3n } }, "a");
    expect(() => sqliteExample(db, { fence: { key: "k", token: 2n } }, "stale")).toThrow(/refused token 2/);
    const exec = sqlJsExecutor(db);
    ensureSqliteFence(exec);
    expect(sqliteFenceAccepted(exec, "k")).toBe(3n);
    expect(db.exec("SELECT entry FROM ledger")[0]?.values).toEqual([["a"]]);
  });

  it("hono: the header's token reaches the fenced write; a lower one is answered 409", async () => {
    const fence = new MemoryFence();
    const ledger: string[] = [];
    const app = honoExample(fence, ledger);
    const send = (header: string, body: string) =>
      app.request("/ledger", { method: "POST", body, headers: { "Shiftlock-Fence": header } });
    expect((await send("prod/claims/c=5", "a")).status).toBe(204);
    expect((await send("prod/claims/c=4", "stale")).status).toBe(409);
    expect(ledger).toEqual(["a"]);
  });
});
