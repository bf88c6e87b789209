/**
 * A generation's lease kept by the CLI itself (docs/protocol.md#sessions): the handoff
 * runtime's one lease loop (client/handoff/session-lease.ts) without a session, for
 * `shiftlock generations keepalive` and for `shiftlock claims run`'s bound claim.
 *
 * Guarantees:
 * - One keepalive every ttl/3 over the lease channel (HTTP where no WebSocket can be
 *   opened), the loss rule of client/lease-timing.ts, and a fresh epoch after a loss: exactly
 *   what a `GenerationSession` keeps.
 * - `generations keepalive` prints each confirmed keepalive (epoch, the local-clock deadline
 *   until which the service keeps the lease, and whether the channel or HTTP confirmed it)
 *   on stdout, and each loss on stderr, until Ctrl-C; a refusal (`generation_not_found`,
 *   `invalid_state`) ends it with status 1. Ctrl-C stops the keepalives: the lease runs to
 *   its deadline (`generations end-lease` ends it at once).
 *
 * Does not: register the generation, or end its lease when it stops.
 */
import { systemClock, type Clock } from "../core/clock.ts";
import type { ClaimsBackend } from "../client/claims/claims-backend.ts";
import { RuntimeEvents } from "../client/handoff/events.ts";
import { SessionLease } from "../client/handoff/session-lease.ts";
import { defaultRenewIntervalMs, defaultSafetyMarginMs } from "../client/lease-timing.ts";
import { anySignal } from "../client/transport/retry-policy.ts";
import type { CommandContext } from "./context.ts";
import { print } from "./output.ts";

/** A lease of `generationId` kept with `ttlMs` (not started: call `live()`), and its events. */
export function leaseKeeper(
  backend: ClaimsBackend,
  generationId: string,
  ttlMs: number,
  clock: Clock = systemClock,
): { lease: SessionLease; events: RuntimeEvents } {
  const cfg = {
    backend,
    clock,
    generationId,
    leaseTtlMs: ttlMs,
    renewIntervalMs: defaultRenewIntervalMs(ttlMs),
    safetyMarginMs: defaultSafetyMarginMs(ttlMs),
  };
  const events = new RuntimeEvents(generationId, () => clock.nowMs());
  return { lease: new SessionLease({ cfg, events }), events };
}

/** `generations keepalive <id> [--ttl]` without `--once`: keep the lease until Ctrl-C. */
export async function keepaliveUntilInterrupted(ctx: CommandContext, id: string, ttlMs: number): Promise<void> {
  const { lease, events } = leaseKeeper(await ctx.claims(), id, ttlMs);
  const show = (epoch: bigint, deadlineMs: number, via: string): void => {
    if (ctx.p.json) print(ctx.p, { lease: { generation: id, epoch, deadlineMs, via } });
    else ctx.p.out(`${id}: lease epoch ${epoch} held until ${new Date(deadlineMs).toISOString()} (${via})`);
  };
  events.on("lease.started", (e) => show(e.epoch, e.deadlineMs, "started"));
  events.on("lease.renewed", (e) => show(e.epoch, e.deadlineMs, e.via));
  events.on("lease.lost", (e) => {
    const text = `lease epoch ${e.epoch} lost: ${e.error.message}`;
    ctx.p.err(ctx.p.json ? JSON.stringify({ lost: { epoch: e.epoch.toString(10), message: text } }) : text);
  });
  if (!ctx.p.json)
    ctx.p.err(`keeping the lease of ${id} (keepalive every ${defaultRenewIntervalMs(ttlMs)} ms); Ctrl-C stops`);
  try {
    for (;;) {
      const term = await lease.live(ctx.signal);
      await aborted(anySignal(term.lost, ctx.signal));
      if (ctx.signal.aborted) return;
    }
  } catch (err) {
    if (!ctx.signal.aborted) throw err;
  } finally {
    lease.close();
  }
}

function aborted(signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) resolve();
    else signal.addEventListener("abort", () => resolve(), { once: true });
  });
}
