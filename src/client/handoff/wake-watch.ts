/**
 * The watch a waiting claim keeps (`waitForOwnership`): it wakes the wait when the claim may
 * have become acquirable or ours, so the wait need not poll often.
 *
 * Guarantees:
 * - `onItem` sees, in version order, every item whose claim is gone, unowned or `mine`; a
 *   reconnect inside the watch resumes from the last version it delivered, so the events of
 *   the meantime still arrive (later), none is skipped.
 * - `live()` is true from the watch's first item (its snapshot: subscribed) until the watch
 *   ends or fails.
 * - `close()` closes the socket on the next tick of the clock, never on the caller's path:
 *   closing (an abort, a close frame) costs more than an adoption, and a successor adopting
 *   a whole commit batch adopts every claim before it pays for any close.
 *
 * Does not: poll, decide ownership, or fail the wait (a broken watch only costs latency:
 * the wait polls at its watchless period).
 */
import type { Clock } from "../../core/clock.ts";
import type { ClaimRecord } from "../../protocol/claims.ts";
import type { ClaimWatchItem, ClaimsBackend } from "../claims/claims-backend.ts";

export interface WakeWatch {
  close(): void;
  live(): boolean;
}

/** Watch `claimName`; undefined when the backend has no watches (polling alone still works). */
export function startWakeWatch(
  backend: ClaimsBackend,
  clock: Clock,
  claimName: string,
  mine: (claim: ClaimRecord) => boolean,
  onItem: (item: ClaimWatchItem) => void,
  stop: AbortSignal,
): WakeWatch | undefined {
  let watch: ReturnType<ClaimsBackend["watchClaim"]>;
  try {
    watch = backend.watchClaim(claimName, { signal: stop });
  } catch {
    return undefined;
  }
  let live = false;
  void (async () => {
    try {
      for await (const item of watch) {
        live = true;
        const claim = item.claim;
        if (claim === null || claim.phase === "unowned" || mine(claim)) onItem(item);
      }
    } catch {
      // A broken watch only costs latency (see the module doc).
    } finally {
      live = false;
    }
  })();
  return { close: () => void clock.sleep(0).then(() => watch.close()), live: () => live };
}
