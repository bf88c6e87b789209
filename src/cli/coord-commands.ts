/**
 * `shiftlock coord …`: the namespace's scopes (`coord scopes`), capability, snapshot and watch of a scope, holding its write lease
 * (with keepalive until Ctrl-C, then release, or for as long as a command runs: `coord run`,
 * run-commands.ts), and publishing under a short-lived lease.
 *
 * Guarantees: a scope the command cannot use is a usage error before any request —
 * `snapshot`, `watch` and `publish` need `--store` and no `--key` (a keyed scope has no
 * generation or root); `capability`, `lease`, `run` and `evict` need `--store` or `--key`. A busy
 * write lease is `lease_held` naming the holding participant.
 */
import type { Coordinator, Scope, WriteLease } from "../client/coord/coord-types.ts";
import { ShiftlockError } from "../protocol/errors.ts";
import { UsageError } from "./args.ts";
import type { CommandContext } from "./context.ts";
import { print } from "./output.ts";
import { noArgs } from "./claims-commands.ts";

/** What a command needs of its scope: an object store (no key), or a store or a key. */
export type ScopeNeed = "store" | "store-or-key";

/** The scope from `--volume`, `--store`, `--key`, `--participant`, checked against `need`. */
export function scopeOf(ctx: CommandContext, command: string, need: ScopeNeed): Scope {
  const f = ctx.flags;
  const objectStoreId = f.string("store");
  const key = f.string("key");
  if (need === "store" && key !== undefined) {
    throw new UsageError(`${command} does not take --key (a keyed scope has no generation, root or watch)`);
  }
  if (need === "store" && objectStoreId === undefined) throw new UsageError(`${command} needs --store`);
  if (objectStoreId === undefined && key === undefined) throw new UsageError(`${command} needs --store or --key`);
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
  const ttlMs = f.duration("ttl");
  const waitMs = f.duration("wait");
  f.done();
  return acquireWriteLease(await ctx.coordinator(), scope, { ttlMs, waitMs, signal: ctx.signal });
}

/**
 * One try (`waitMs` undefined: a busy lease is `lease_held` naming its holder) or a wait in
 * the server's first-come first-served queue for up to `waitMs`. `ttlMs` undefined: the
 * client's default.
 */
export async function acquireWriteLease(
  coordinator: Coordinator,
  scope: Scope,
  o: { ttlMs: number | undefined; waitMs: number | undefined; signal: AbortSignal },
): Promise<WriteLease> {
  const opts = { signal: o.signal, ...(o.ttlMs === undefined ? {} : { ttlMs: o.ttlMs }) };
  if (o.waitMs === undefined) {
    const got = await coordinator.tryAcquireWriteLease(scope, opts);
    if (got.acquired) return got.lease;
    const holder = got.holder === "" ? {} : { holder: got.holder };
    throw new ShiftlockError("lease_held", "write lease is held (pass --wait to queue for it)", holder);
  }
  return coordinator.waitAcquireWriteLease(scope, { ...opts, waitMs: o.waitMs });
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

/** The commands on one scope besides `run`. */
const SCOPE_COMMANDS: readonly string[] = ["capability", "snapshot", "watch", "lease", "publish", "evict"];

/** Returns the exit status when the command sets one (`run`). */
export async function coordCommand(sub: string, ctx: CommandContext): Promise<number | undefined> {
  if (sub === "run")
    return (await import("./run-commands.ts")).coordRun(ctx, scopeOf(ctx, "coord run", "store-or-key"));
  if (sub === "scopes") {
    await listScopes(ctx);
    return;
  }
  if (!SCOPE_COMMANDS.includes(sub)) throw new UsageError(`unknown command: coord ${sub}`);
  if (ctx.args.length > 0) throw new UsageError(`unexpected argument ${JSON.stringify(ctx.args[0])}`);
  const f = ctx.flags;
  const needsStore = sub === "snapshot" || sub === "watch" || sub === "publish";
  const scope = scopeOf(ctx, `coord ${sub}`, needsStore ? "store" : "store-or-key");
  const opts = { signal: ctx.signal };
  switch (sub) {
    case "evict": {
      // An operator's: ends whoever holds the lease (docs/protocol.md#eviction).
      const note = f.string("note");
      f.done();
      const snapshot = await (
        await ctx.coordinator()
      ).evict(scope, { ...opts, ...(note === undefined ? {} : { note }) });
      print(ctx.p, { snapshot });
      return;
    }
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
