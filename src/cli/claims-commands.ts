/**
 * `shiftlock claims …` and `shiftlock generations …`: one command per ClaimsBackend call.
 * Thin: arguments map to the request, the answer is printed as is (`claims list`: a table
 * with a header once the last page arrived, or one JSON object per record with `--json`,
 * streamed page after page). `claims evict` is an operator's (the `admin` role): it prints
 * the record it left. `claims run` holds a claim while a command runs
 * (run-commands.ts); `generations keepalive` without `--once` keeps a generation's lease
 * until Ctrl-C (lease-keeper.ts). A mutation without `--ttl` asks for the client's default lease,
 * {@link DEFAULT_LEASE_TTL_MS} — except `renew`, where a silent default could shorten the
 * lease, so the ttl is required.
 */
import { UsageError } from "./args.ts";
import type { CommandContext } from "./context.ts";
import { print, printTable } from "./output.ts";
import { GENERATION_STATES, type GenerationState } from "../protocol/generations.ts";
import { CLAIM_PHASES, type ClaimRecord } from "../protocol/claims.ts";
import { DEFAULT_LEASE_TTL_MS } from "../protocol/coord.ts";

/** Refuse positional arguments (list commands take options only). */
export function noArgs(ctx: CommandContext): void {
  if (ctx.args.length > 0) throw new UsageError(`unexpected argument ${JSON.stringify(ctx.args[0])}`);
}

/** An option restricted to a set of values, or undefined when absent. */
function oneOf<T extends string>(value: string | undefined, allowed: readonly T[], name: string): T | undefined {
  if (value === undefined) return undefined;
  if (!(allowed as readonly string[]).includes(value))
    throw new UsageError(`${name} must be one of ${allowed.join(", ")}`);
  return value as T;
}

function one(ctx: CommandContext, what: string): string {
  const [value, ...rest] = ctx.args;
  if (value === undefined) throw new UsageError(`${what} is required`);
  if (rest.length > 0) throw new UsageError(`unexpected argument ${JSON.stringify(rest[0])}`);
  return value;
}

/** Returns the exit status when the command sets one (`run`). */
export async function claimsCommand(sub: string, ctx: CommandContext): Promise<number | undefined> {
  const f = ctx.flags;
  const opts = { signal: ctx.signal };
  switch (sub) {
    case "run":
      // Loaded on demand: child processes and the lease loop are only this command's.
      return (await import("./run-commands.ts")).claimsRun(ctx);
    case "get": {
      const claim = one(ctx, "claim name");
      f.done();
      print(ctx.p, { claim: await (await ctx.claims()).getClaim(claim, opts) });
      return;
    }
    case "list": {
      noArgs(ctx);
      const phase = oneOf(f.string("phase"), CLAIM_PHASES, "--phase");
      const filter = { prefix: f.string("prefix"), phase, owner: f.string("owner") };
      const page = { signal: ctx.signal, limit: f.limit() };
      f.done();
      const rows: string[][] = [];
      for await (const claim of (await ctx.claims()).listClaims(filter, page)) {
        if (ctx.p.json) print(ctx.p, { claim });
        else rows.push(claimRow(claim));
      }
      if (!ctx.p.json) printTable(ctx.p, CLAIM_COLUMNS, rows);
      return;
    }
    case "acquire": {
      const claimName = one(ctx, "claim name");
      const req = {
        claimName,
        generationId: f.required("generation"),
        ttlMs: f.duration("ttl") ?? DEFAULT_LEASE_TTL_MS,
        allowEmptyOnly: f.bool("allow-empty-only"),
        ...withOp(f.string("operation-id")),
      };
      f.done();
      print(ctx.p, { claim: await (await ctx.claims()).acquireClaim(req, opts) });
      return;
    }
    case "renew": {
      const claimName = one(ctx, "claim name");
      const req = {
        claimName,
        generationId: f.required("generation"),
        token: f.requiredCounter("fencing-token"),
        ttlMs: f.requiredDuration("ttl", "the lease's new length from now (a default could shorten it)"),
        ...withOp(f.string("operation-id")),
      };
      f.done();
      print(ctx.p, { claim: await (await ctx.claims()).renewClaim(req, opts) });
      return;
    }
    case "release": {
      const claimName = one(ctx, "claim name");
      const req = {
        claimName,
        generationId: f.required("generation"),
        token: f.requiredCounter("fencing-token"),
        ...withOp(f.string("operation-id")),
      };
      f.done();
      print(ctx.p, { claim: await (await ctx.claims()).releaseClaim(req, opts) });
      return;
    }
    case "evict": {
      const claimName = one(ctx, "claim name");
      const note = f.string("note");
      f.done();
      const req = { claimName, ...(note === undefined ? {} : { note }) };
      print(ctx.p, { claim: await (await ctx.claims()).evictClaim(req, opts) });
      return;
    }
    case "watch": {
      const claim = one(ctx, "claim name");
      const afterVersion = f.counter("after-version");
      f.done();
      const watch = (await ctx.claims()).watchClaim(claim, {
        signal: ctx.signal,
        ...(afterVersion === undefined ? {} : { afterVersion }),
      });
      try {
        for await (const item of watch) {
          if (ctx.p.json) print(ctx.p, item);
          else if (item.type === "snapshot") {
            ctx.p.out(`snapshot${item.truncated ? " (truncated history)" : ""}: ${describe(item.claim)}`);
          } else {
            const note = item.note === undefined ? "" : ` (note: ${JSON.stringify(item.note)})`;
            ctx.p.out(`${new Date(item.timeMs).toISOString()} ${item.reason}: ${describe(item.claim)}${note}`);
          }
        }
      } catch (err) {
        if (!ctx.signal.aborted) throw err;
      } finally {
        watch.close();
      }
      return;
    }
    default:
      throw new UsageError(`unknown command: claims ${sub}`);
  }
}

export async function transferCommand(sub: string, ctx: CommandContext): Promise<void> {
  const f = ctx.flags;
  const opts = { signal: ctx.signal };
  const claimName = one(ctx, "claim name");
  const base = { claimName, fromGeneration: f.required("from"), toGeneration: f.required("to") };
  const backend = async () => ctx.claims();
  switch (sub) {
    case "prepare": {
      const req = {
        ...base,
        token: f.requiredCounter("fencing-token"),
        ttlMs: f.duration("ttl") ?? DEFAULT_LEASE_TTL_MS,
        ...withOp(f.string("operation-id")),
      };
      f.done();
      print(ctx.p, { claim: await (await backend()).prepareTransfer(req, opts) });
      return;
    }
    case "commit": {
      const req = {
        ...base,
        expectedToken: f.requiredCounter("expected-token"),
        ttlMs: f.duration("ttl") ?? DEFAULT_LEASE_TTL_MS,
        ...withOp(f.string("operation-id")),
      };
      f.done();
      print(ctx.p, { claim: await (await backend()).commitTransfer(req, opts) });
      return;
    }
    case "abort": {
      const req = { ...base, expectedToken: f.requiredCounter("expected-token"), ...withOp(f.string("operation-id")) };
      f.done();
      print(ctx.p, { claim: await (await backend()).abortTransfer(req, opts) });
      return;
    }
    default:
      throw new UsageError(`unknown command: claims transfer ${sub}`);
  }
}

export async function generationsCommand(sub: string, ctx: CommandContext): Promise<void> {
  const f = ctx.flags;
  const opts = { signal: ctx.signal };
  switch (sub) {
    case "register": {
      const id = one(ctx, "generation id");
      const req = { id, service: f.required("service"), instanceId: f.required("instance") };
      f.done();
      print(ctx.p, { generation: await (await ctx.claims()).registerGeneration(req, opts) });
      return;
    }
    case "list": {
      noArgs(ctx);
      const filter = { service: f.string("service"), state: oneOf(f.string("state"), GENERATION_STATES, "--state") };
      const page = { signal: ctx.signal, limit: f.limit() };
      f.done();
      for await (const generation of (await ctx.claims()).listGenerations(filter, page)) {
        if (ctx.p.json) print(ctx.p, { generation });
        else ctx.p.out(`${generation.id}\tservice=${generation.service} state=${generation.state}`);
      }
      return;
    }
    case "get": {
      const id = one(ctx, "generation id");
      f.done();
      print(ctx.p, { generation: await (await ctx.claims()).getGeneration(id, opts) });
      return;
    }
    case "keepalive": {
      const id = one(ctx, "generation id");
      const ttlMs = f.duration("ttl") ?? DEFAULT_LEASE_TTL_MS;
      const once = f.bool("once");
      const operationId = once ? f.string("operation-id") : undefined;
      f.done();
      if (once) {
        const req = { id, ttlMs, ...withOp(operationId) };
        print(ctx.p, { generation: await (await ctx.claims()).keepaliveGeneration(req, opts) });
        return;
      }
      // Loaded on demand: the lease loop is only this command's (and `claims run`'s).
      return (await import("./lease-keeper.ts")).keepaliveUntilInterrupted(ctx, id, ttlMs);
    }
    case "end-lease": {
      const id = one(ctx, "generation id");
      f.done();
      print(ctx.p, { generation: await (await ctx.claims()).endGenerationLease(id, opts) });
      return;
    }
    case "set-state": {
      const [id, state, ...rest] = ctx.args;
      if (id === undefined || state === undefined) throw new UsageError("usage: generations set-state <id> <state>");
      if (rest.length > 0) throw new UsageError(`unexpected argument ${JSON.stringify(rest[0])}`);
      if (!(GENERATION_STATES as readonly string[]).includes(state)) {
        throw new UsageError(`state must be one of ${GENERATION_STATES.join(", ")}`);
      }
      const reason = f.string("reason");
      f.done();
      const req = { id, state: state as GenerationState, ...(reason === undefined ? {} : { reason }) };
      print(ctx.p, { generation: await (await ctx.claims()).updateGeneration(req, opts) });
      return;
    }
    default:
      throw new UsageError(`unknown command: generations ${sub}`);
  }
}

function withOp(operationId: string | undefined): { operationId?: string } {
  return operationId === undefined ? {} : { operationId };
}

/** `claims list`'s columns; the listed expiry may trail renewals (`claims get` is exact). */
const CLAIM_COLUMNS = ["NAME", "PHASE", "OWNER", "TOKEN", "SUCCESSOR", "EXPIRES"];

function claimRow(claim: ClaimRecord): string[] {
  const orDash = (text: string): string => (text === "" ? "-" : text);
  const expires =
    claim.phase === "unowned" || claim.expiresAtMs === 0 ? "-" : new Date(claim.expiresAtMs).toISOString();
  return [
    claim.name,
    claim.phase,
    orDash(claim.ownerGeneration),
    claim.fencingToken.toString(10),
    orDash(claim.pendingSuccessor),
    expires,
  ];
}

function describe(
  claim: { ownerGeneration: string; fencingToken: bigint; phase: string; version: bigint } | null,
): string {
  if (claim === null) return "absent";
  const owner = claim.ownerGeneration === "" ? "-" : claim.ownerGeneration;
  return `phase=${claim.phase} owner=${owner} token=${claim.fencingToken} version=${claim.version}`;
}
