// `npm install` on a fresh clone prints no install-scripts warning: every installed package
// that has an install script is named in package.json's `allowScripts` (README: Quick start).
// A new dependency that brings an install script fails here until it is reviewed and allowed
// or denied (`npm install-scripts approve|deny <pkg>`).
import { expect, it } from "vitest";
import { REPO, runOk } from "../e2e/package-install.ts";

it("every installed package with an install script is allowed or denied in package.json", async () => {
  const { stdout } = await runOk("npm", ["install-scripts", "ls", "--json"], REPO);
  const pending = (JSON.parse(stdout) as { allowScripts: { name: string }[] }).allowScripts;
  expect(pending.map((entry) => entry.name)).toEqual([]);
}, 30_000);
