/**
 * `shiftlock claims run` and `shiftlock coord run`: hold a lease for as long as a command
 * runs (the `etcdctl lock` / `consul lock` pattern).
 *
 * Guarantees (statuses are documented in docs/cli.md):
 * - The command starts only once the lease is held, with `SHIFTLOCK_CLAIM`,
 *   `SHIFTLOCK_FENCING_TOKEN`, `SHIFTLOCK_GENERATION` (claims) or `SHIFTLOCK_LEASE_EPOCH`,
 *   `SHIFTLOCK_LEASE_ID` (coord), and `SHIFTLOCK_FENCE_KEY` (both: the lease's fence key,
 *   docs/fencing.md) added to the inherited environment.
 * - The lease is kept while the command runs — `claims run` of a registered generation binds
 *   the claim to the generation's lease, which it keeps itself (one keepalive every ttl/3
 *   over the lease channel, claim-lock.ts); otherwise the claim (or coord lease) is renewed
 *   every ttl/3 — and released only after the command ended, never while it may still be
 *   writing. When the command ends, the status is its own (signal → 128 + n).
 * - Loss of the lease stops the command (SIGTERM, SIGKILL after `--grace`) and the
 *   status is `EXIT_STATUS.leaseLost` (4) whatever the command returned.
 * - SIGINT/SIGTERM while waiting for the lease end the wait (status 128 + n, nothing ran);
 *   while the command runs they are forwarded to it, and the lease is released once it ends.
 *
 * Does not: print anything on stdout (it is the command's); notes go to stderr.
 */
import type { Scope } from "../client/coord/coord-types.ts";
import type { ClaimRecord } from "../protocol/claims.ts";
import { ShiftlockError } from "../protocol/errors.ts";
import { DEFAULT_LEASE_TTL_MS } from "../protocol/coord.ts";
import { UsageError } from "./args.ts";
import { superviseChild, signalStatus, type ChildOutcome, type ForwardedSignal } from "./child-supervisor.ts";
import { holdClaim } from "./claim-lock.ts";
import { acquireWriteLease } from "./coord-commands.ts";
import { DEFAULT_GRACE_MS, type CommandContext } from "./context.ts";
import { EXIT_STATUS, toJson } from "./output.ts";

/** What both run commands hold: a lease with a loss signal, its variables and its release. */
interface HeldLease {
  env: Record<string, string>;
  /** Aborts on loss (no release happens while the command runs). */
  signal: AbortSignal;
  release(): Promise<void>;
}

/** `claims run <claim> --generation G [--ttl] [--wait] [--grace] -- <command…>` */
export async function claimsRun(ctx: CommandContext): Promise<number> {
  const [claimName, ...extra] = ctx.args.slice(0, ctx.args.length - (ctx.command?.length ?? 0));
  if (claimName === undefined) throw new UsageError("claim name is required");
  if (extra.length > 0)
    throw new UsageError(`unexpected argument ${JSON.stringify(extra[0])} (put the command after --)`);
  const f = ctx.flags;
  const generationId = f.required("generation");
  const ttlMs = f.duration("ttl") ?? DEFAULT_LEASE_TTL_MS;
  const waitMs = f.duration("wait") ?? 0;
  const graceMs = f.duration("grace") ?? DEFAULT_GRACE_MS;
  f.done();
  const command = commandOf(ctx);
  const backend = await ctx.claims();
  return runHolding(ctx, command, graceMs, async (signal) => {
    const lease = await holdClaim({
      backend,
      claimName,
      generationId,
      ttlMs,
      waitMs,
      signal,
      onWaiting: (holder) => note(ctx, "waiting", waitingText(claimName, holder, waitMs), { claim: claimName, holder }),
    });
    return {
      env: {
        SHIFTLOCK_CLAIM: claimName,
        SHIFTLOCK_FENCING_TOKEN: lease.token.toString(10),
        SHIFTLOCK_FENCE_KEY: lease.fence.key,
        SHIFTLOCK_GENERATION: generationId,
      },
      signal: lease.signal,
      release: () => lease.release(),
    };
  });
}

/** `coord run --volume V (--store S | --key K) [--ttl] [--wait] [--grace] -- <command…>` */
export async function coordRun(ctx: CommandContext, scope: Scope): Promise<number> {
  const f = ctx.flags;
  const extra = ctx.args.slice(0, ctx.args.length - (ctx.command?.length ?? 0));
  if (extra.length > 0)
    throw new UsageError(`unexpected argument ${JSON.stringify(extra[0])} (put the command after --)`);
  const ttlMs = f.duration("ttl");
  const waitMs = f.duration("wait");
  const graceMs = f.duration("grace") ?? DEFAULT_GRACE_MS;
  f.done();
  const command = commandOf(ctx);
  const coordinator = await ctx.coordinator();
  return runHolding(ctx, command, graceMs, async (signal) => {
    const lease = await acquireWriteLease(coordinator, scope, { ttlMs, waitMs, signal });
    return {
      env: {
        SHIFTLOCK_LEASE_EPOCH: lease.epoch.toString(10),
        SHIFTLOCK_LEASE_ID: lease.leaseId,
        SHIFTLOCK_FENCE_KEY: lease.fence.key,
      },
      signal: lease.signal,
      release: () => lease.release(),
    };
  });
}

function commandOf(ctx: CommandContext): string[] {
  if (ctx.command === undefined || ctx.command.length === 0) {
    throw new UsageError("the command to run goes after --, e.g. `-- ./job.sh arg`");
  }
  return ctx.command;
}

/** Acquire (interruptible), run the command under the lease, release, and pick the status. */
async function runHolding(
  ctx: CommandContext,
  command: string[],
  graceMs: number,
  acquire: (signal: AbortSignal) => Promise<HeldLease>,
): Promise<number> {
  // Until the command runs, a signal ends the wait; then every signal goes to the command.
  let forward: ((signal: ForwardedSignal) => void) | undefined;
  let interrupted: ForwardedSignal | undefined;
  const waiting = new AbortController();
  const unsubscribe = ctx.onSignal((signal) => {
    if (forward !== undefined) return forward(signal);
    interrupted ??= signal;
    waiting.abort(new Error(`interrupted (${signal})`));
  });
  try {
    let lease: HeldLease;
    try {
      lease = await acquire(waiting.signal);
    } catch (err) {
      if (interrupted !== undefined) return signalStatus(interrupted);
      throw err;
    }
    let outcome: ChildOutcome;
    try {
      if (interrupted !== undefined) return signalStatus(interrupted);
      if (lease.signal.aborted) return lostStatus(ctx, lease.signal.reason);
      outcome = await superviseChild({
        command,
        env: { ...ctx.env, ...lease.env },
        lost: lease.signal,
        graceMs,
        onSignal: (listener) => {
          forward = listener;
          return () => (forward = undefined);
        },
        note: (message) => note(ctx, "note", message),
      });
    } finally {
      // After the command ended (or never started): give the lease back, bounded by its own timeout.
      await lease.release().catch((err: unknown) => {
        note(ctx, "error", `release failed: ${err instanceof Error ? err.message : String(err)}`);
      });
    }
    return outcome.lost ? lostStatus(ctx, lease.signal.reason) : outcome.status;
  } finally {
    unsubscribe();
  }
}

/** Say the lease was lost, and why when the service said (e.g. `evicted`: an operator took it). */
function lostStatus(ctx: CommandContext, reason: unknown): number {
  const why = lossCause(reason);
  const because = why === undefined ? "" : ` (${why.code}: ${why.message})`;
  note(ctx, "lost", `exiting ${EXIT_STATUS.leaseLost}: the lease was lost while the command ran${because}`, {
    ...(why === undefined ? {} : { code: why.code }),
  });
  return EXIT_STATUS.leaseLost;
}

/** The service's refusal behind a loss (the innermost coded cause), if one caused it. */
function lossCause(reason: unknown): ShiftlockError | undefined {
  let found: ShiftlockError | undefined;
  for (let e = reason; e instanceof Error; e = e.cause) {
    if (e instanceof ShiftlockError && e.code !== "lease_lost") found = e;
  }
  return found;
}

function waitingText(claim: string, holder: ClaimRecord | undefined, waitMs: number): string {
  const who =
    holder === undefined || holder.ownerGeneration === ""
      ? ""
      : ` by ${holder.ownerGeneration} (token ${holder.fencingToken}, ${holder.phase})`;
  return `claim ${JSON.stringify(claim)} is held${who}; waiting up to ${waitMs} ms for it to be free`;
}

/** shiftlock's own lines go to stderr: stdout belongs to the command. */
function note(ctx: CommandContext, kind: string, message: string, fields: Record<string, unknown> = {}): void {
  ctx.p.err(ctx.p.json ? toJson({ [kind]: { message, ...fields } }) : `shiftlock: ${message}`);
}
