/**
 * `shiftlock coord …`: the namespace's scopes (`coord scopes`), capability, snapshot and watch of a scope, holding its write lease
 * (with keepalive until Ctrl-C, then release, or for as long as a command runs: `coord run`,
 * run-commands.ts), and publishing under a short-lived lease.
 */
import type { Scope, WriteLease } from "../client/coord/coord-types.ts";
import { ShiftlockError } from "../protocol/errors.ts";
import { UsageError } from "./args.ts";
import type { CommandContext } from "./context.ts";
import { print } from "./output.ts";
import { noArgs } from "./claims-commands.ts";

function scopeOf(ctx: CommandContext): Scope {
  const f = ctx.flags;
  const objectStoreId = f.string("store");
  const key = f.string("key");
  return {
    volumeId: f.required("volume"),
    participantId: f.string("participant") ?? "shiftlock-cli",
    ...(objectStoreId === undefined ? {} : { objectStoreId }),
    ...(key === undefined ? {} : { key }),
  };
}

function leaseView(lease: WriteLease): Record<string, unknown> {
  return { lease: { leaseId: lease.leaseId, epoch: lease.epoch, expiresAtMs: lease.expiresAtMs } };
}

async function acquire(ctx: CommandContext, scope: Scope): Promise<WriteLease> {
  const f = ctx.flags;
  const ttlMs = f.ms("ttl-ms");
  const waitMs = f.ms("wait-ms");
  f.done();
  const coordinator = await ctx.coordinator();
  const opts = { signal: ctx.signal, ...(ttlMs === undefined ? {} : { ttlMs }) };
  if (waitMs === undefined) {
    const got = await coordinator.tryAcquireWriteLease(scope, opts);
    if (!got.acquired) {
      throw new ShiftlockError("lease_held", "write lease is held (pass --wait-ms to queue for it)");
    }
    return got.lease;
  }
  return coordinator.waitAcquireWriteLease(scope, { ...opts, waitMs });
}

/** `coord scopes [--volume V] [--limit N]`: every scope of the namespace, page after page. */
async function listScopes(ctx: CommandContext): Promise<void> {
  noArgs(ctx);
  const f = ctx.flags;
  const filter = { volumeId: f.string("volume") };
  const page = { signal: ctx.signal, limit: f.limit() };
  f.done();
  for await (const scope of (await ctx.coordinator()).listScopes(filter, page)) {
    if (ctx.p.json) print(ctx.p, { scope });
    else {
      const where = [scope.volumeId, scope.objectStoreId, scope.key].join("/");
      const held = scope.held ? `held until ${new Date(scope.leaseExpiresAtMs).toISOString()}` : "free";
      ctx.p.out(`${where}\tgeneration=${scope.generation} ${held}${scope.wantLock ? " wantLock" : ""}`);
    }
  }
}

/** Returns the exit status when the command sets one (`run`). */
export async function coordCommand(sub: string, ctx: CommandContext): Promise<number | undefined> {
  if (sub === "run") return (await import("./run-commands.ts")).coordRun(ctx, scopeOf(ctx));
  if (sub === "scopes") {
    await listScopes(ctx);
    return;
  }
  if (ctx.args.length > 0) throw new UsageError(`unexpected argument ${JSON.stringify(ctx.args[0])}`);
  const f = ctx.flags;
  const scope = scopeOf(ctx);
  const opts = { signal: ctx.signal };
  switch (sub) {
    case "capability":
      f.done();
      print(ctx.p, { capability: await (await ctx.coordinator()).capability(scope, opts) });
      return;
    case "snapshot":
      f.done();
      print(ctx.p, { snapshot: await (await ctx.coordinator()).snapshot(scope, opts) });
      return;
    case "watch": {
      const after = f.counter("after-generation") ?? 0n;
      f.done();
      const watch = await (await ctx.coordinator()).watch(scope, after, opts);
      try {
        for await (const event of watch) print(ctx.p, { event });
      } catch (err) {
        if (!ctx.signal.aborted) throw err;
      } finally {
        watch.close();
      }
      return;
    }
    case "lease": {
      const lease = await acquire(ctx, scope);
      print(ctx.p, leaseView(lease));
      if (!ctx.p.json) ctx.p.out("holding the write lease (keepalive every ttl/3); Ctrl-C releases it");
      const interrupted = new Promise<void>((resolve) => {
        if (ctx.signal.aborted) resolve();
        ctx.signal.addEventListener("abort", () => resolve(), { once: true });
      });
      await Promise.race([interrupted, lease.done]);
      if (lease.err !== undefined) throw lease.err;
      await lease.release();
      print(ctx.p, { released: true, epoch: lease.epoch });
      return;
    }
    case "publish": {
      const rootText = f.string("root");
      let root: unknown;
      if (rootText !== undefined) {
        try {
          root = JSON.parse(rootText);
        } catch {
          throw new UsageError("--root must be JSON");
        }
      }
      const generation = f.counter("generation");
      const expectedGeneration = f.counter("expected-generation");
      const prefix = f.string("key-prefix");
      const lease = await acquire(ctx, scope);
      try {
        const snapshot = await lease.publish(
          {
            ...(rootText === undefined ? {} : { root }),
            ...(generation === undefined ? {} : { generation }),
            ...(expectedGeneration === undefined ? {} : { expectedGeneration }),
            ...(prefix === undefined ? {} : { keyPrefixChanged: Uint8Array.from(Buffer.from(prefix, "base64")) }),
          },
          opts,
        );
        print(ctx.p, { snapshot, epoch: lease.epoch });
      } finally {
        await lease.release();
      }
      return;
    }
    default:
      throw new UsageError(`unknown command: coord ${sub}`);
  }
}
