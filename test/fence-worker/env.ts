/** The fence test Worker's bindings, typed (its config is not the one `wrangler types` reads). */
import { env } from "cloudflare:workers";
import type { FenceTestEnv } from "./worker.ts";

export const fenceEnv = env as unknown as FenceTestEnv;

/** A fence key no other test uses. */
export function uniqueKey(label: string): string {
  return `test/claims/${label}-${crypto.randomUUID()}`;
}
