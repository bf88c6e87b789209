// The bindings as the worker tests see them: the test entry (test-entry.ts) binds CLAIMS,
// SCOPES, GENERATIONS and INDEX to its subclasses, which the Env generated from wrangler.toml
// cannot know. Stubs taken from here reach the subclasses' `hooks` in runInDurableObject.
import { env } from "cloudflare:workers";
import type { ClaimObject, GenerationObject, NamespaceIndex, ScopeObject } from "./test-entry.ts";

type TestEnv = Omit<Env, "CLAIMS" | "SCOPES" | "GENERATIONS" | "INDEX"> & {
  CLAIMS: DurableObjectNamespace<ClaimObject>;
  SCOPES: DurableObjectNamespace<ScopeObject>;
  GENERATIONS: DurableObjectNamespace<GenerationObject>;
  INDEX: DurableObjectNamespace<NamespaceIndex>;
};

export const testEnv = env as unknown as TestEnv;
