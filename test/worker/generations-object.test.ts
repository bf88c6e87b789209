// The generation object's failures: every one is the one ShiftlockError with a code
// ("internal" for a broken invariant), whatever the object finds in its storage.
import { testEnv } from "./test-env.ts";
import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { objectName } from "../../src/durable/object-names.ts";
import type { GenerationObject } from "./test-entry.ts";
import { restartObject } from "./object-helpers.ts";

function registered() {
  const ns = `ns-${crypto.randomUUID()}`;
  const id = `gen-${crypto.randomUUID()}`;
  // A fresh stub per call: a stub whose object was restarted stays broken.
  const stub = () => testEnv.GENERATIONS.getByName(objectName(ns, "generation", id));
  return { id, stub, register: () => stub().register({ id, service: "api", instanceId: "i-1" }) };
}

/** The code and class name of what `run` throws (over RPC, as the router sees it). */
async function failure(run: () => Promise<unknown>): Promise<{ name: string; code: unknown }> {
  try {
    await run();
  } catch (err) {
    return { name: (err as Error).name, code: (err as { code?: unknown }).code };
  }
  throw new Error("expected a failure");
}

const internal = { name: "ShiftlockError", code: "internal" };

describe("generation object failures", () => {
  it("an object addressed with an id it does not hold refuses with internal", async () => {
    const g = registered();
    expect((await g.register()).status).toBe(200);
    expect(await failure(async () => g.stub().get("someone-else"))).toEqual(internal);
    expect(await failure(async () => g.stub().patch("someone-else", { state: "standby" }))).toEqual(internal);
  });

  it("a stored state this code does not know is internal, not a guess", async () => {
    const g = registered();
    await g.register();
    await runInDurableObject(g.stub(), (_o: GenerationObject, state) => {
      state.storage.sql.exec("UPDATE generation SET state = 'hovering'");
    });
    expect(await failure(async () => g.stub().get(g.id))).toEqual(internal);
  });

  it("refuses to start on a schema newer than the code: every method fails with internal", async () => {
    const g = registered();
    await g.register();
    await runInDurableObject(g.stub(), (_o: GenerationObject, state) => {
      state.storage.sql.exec("UPDATE meta SET value = 99 WHERE key = 'schema_version'");
    });
    await restartObject(g.stub());
    expect(await failure(async () => g.stub().get(g.id))).toEqual(internal);
    expect(await failure(async () => g.stub().patch(g.id, { state: "standby" }))).toEqual(internal);
    expect(await failure(() => g.register())).toEqual(internal);
  });
});
