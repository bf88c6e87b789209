/**
 * One renew of a held claim, bounded by the time left before the lease would be lost.
 *
 * Guarantees: resolves (never rejects) with what happened — renewed, refused by the server
 * (the lease is gone: another owner, a newer token, or no claim), a transient failure worth
 * retrying, or the budget ran out first — and leaves no request or timer behind when it
 * returns or when `stop` aborts.
 */
import type { ClaimRecord } from "../../protocol/claims.ts";
import { hasCode } from "../../protocol/errors.ts";
import type { ResolvedConfig } from "./config.ts";

/** Codes that mean the claim is no longer ours: retrying cannot help. */
export const REFUSED = ["not_owner", "stale_token", "claim_not_found"] as const;

export type RenewOutcome =
  | { kind: "ok"; record: ClaimRecord; sentAt: number }
  | { kind: "refused" | "transient"; error: Error }
  | { kind: "deadline" };

/** Renew `claimName` for `ttlMs`, giving up after `budgetMs` on the configured clock. */
export async function renewOnce(
  cfg: ResolvedConfig,
  claimName: string,
  token: bigint,
  ttlMs: number,
  budgetMs: number,
  stop: AbortSignal,
): Promise<RenewOutcome> {
  const sentAt = cfg.clock.nowMs();
  const ctl = new AbortController();
  const onStop = (): void => ctl.abort();
  stop.addEventListener("abort", onStop, { once: true });
  try {
    const call = cfg.backend
      .renewClaim({ claimName, generationId: cfg.generationId, token, ttlMs }, { signal: ctl.signal })
      .then(
        (record) => ({ kind: "ok" as const, record, sentAt }),
        (err: unknown) => ({
          kind: REFUSED.some((code) => hasCode(err, code)) ? ("refused" as const) : ("transient" as const),
          error: err as Error,
        }),
      );
    const timer = cfg.clock.sleep(budgetMs, ctl.signal).then(
      () => ({ kind: "deadline" as const }),
      () => ({ kind: "deadline" as const }),
    );
    return await Promise.race([call, timer]);
  } finally {
    ctl.abort();
    stop.removeEventListener("abort", onStop);
  }
}
