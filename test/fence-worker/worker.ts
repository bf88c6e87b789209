/**
 * The fence tests' Worker: a user's resources written through shiftlock/fence.
 *
 * - `FencedLedger` (Durable Object, SQLite): `append(key, token, entry)` appends to its
 *   ledger under `Fence.guard`.
 * - `POST /{do|d1|r2}/append` `{key, token, object?, entry}` → 200 `{ok:true}` or 409 with
 *   FenceRejected's body: the same writes over HTTP, for the torture variant.
 *
 * Guarantees nothing beyond what the fences do; it exists only for tests.
 */
import { DurableObject } from "cloudflare:workers";
import { Fence, FenceRejected, ensureD1Fence, fencedBatch, fencedPut } from "../../src/client/fence/index.ts";

export interface FenceTestEnv {
  LEDGER: DurableObjectNamespace<FencedLedger>;
  DB: D1Database;
  BUCKET: R2Bucket;
}

// example:start durable-object
export class FencedLedger extends DurableObject<FenceTestEnv> {
  readonly fence = new Fence(this.ctx.storage);

  constructor(ctx: DurableObjectState, env: FenceTestEnv) {
    super(ctx, env);
    ctx.storage.sql.exec(
      "CREATE TABLE IF NOT EXISTS ledger (seq INTEGER PRIMARY KEY AUTOINCREMENT, key TEXT NOT NULL, token TEXT NOT NULL, entry TEXT NOT NULL)",
    );
  }

  /** Append under the fence; `{ok:false, accepted}` when refused. */
  append(key: string, token: string, entry: string): { ok: true } | { ok: false; accepted: string } {
    try {
      // One transactionSync: compare, raise the fence, insert. A lower token inserts nothing.
      this.fence.guard(key, token, () => {
        this.ctx.storage.sql.exec("INSERT INTO ledger (key, token, entry) VALUES (?, ?, ?)", key, token, entry);
      });
      return { ok: true };
    } catch (err) {
      if (err instanceof FenceRejected) return { ok: false, accepted: err.accepted.toString() };
      throw err;
    }
  }

  /** The ledger in append order. */
  entries(): { key: string; token: string; entry: string }[] {
    return this.ctx.storage.sql
      .exec<{ key: string; token: string; entry: string }>("SELECT key, token, entry FROM ledger ORDER BY seq")
      .toArray();
  }
}
// example:end

let d1Ready: Promise<void> | undefined;

/** The D1 ledger table and the fence table (once per isolate). */
export function ensureD1Ledger(db: D1Database): Promise<void> {
  d1Ready ??= (async () => {
    await ensureD1Fence(db);
    await db.exec(
      "CREATE TABLE IF NOT EXISTS ledger (seq INTEGER PRIMARY KEY AUTOINCREMENT, key TEXT NOT NULL, token TEXT NOT NULL, entry TEXT NOT NULL)",
    );
  })();
  return d1Ready;
}

interface AppendBody {
  key: string;
  token: string;
  entry: string;
  object?: string;
}

export default {
  async fetch(request: Request, env: FenceTestEnv): Promise<Response> {
    const url = new URL(request.url);
    const kind = /^\/(do|d1|r2)\/append$/.exec(url.pathname)?.[1];
    if (request.method !== "POST" || kind === undefined) return new Response("not found", { status: 404 });
    const body = await request.json<AppendBody>();
    try {
      if (kind === "do") {
        const result = await env.LEDGER.getByName(body.key).append(body.key, body.token, body.entry);
        return Response.json(result, { status: result.ok ? 200 : 409 });
      }
      if (kind === "d1") {
        await ensureD1Ledger(env.DB);
        const { key, token, entry } = body;
        // example:start d1
        // The guard runs first in the batch; a lower token fails it, and D1 rolls the whole
        // batch back: the INSERT below never runs.
        const insert = env.DB.prepare("INSERT INTO ledger (key, token, entry) VALUES (?, ?, ?)");
        await fencedBatch(env.DB, key, token, [insert.bind(key, token, entry)]);
        // example:end
      } else {
        const { key, token, entry } = body;
        const objectKey = body.object ?? key;
        // example:start r2
        // Refused (FenceRejected) if this object was last written under a higher token of `key`.
        await fencedPut(env.BUCKET, objectKey, entry, { fence: { key, token } });
        // example:end
      }
      return Response.json({ ok: true });
    } catch (err) {
      if (err instanceof FenceRejected)
        return Response.json({ ok: false, accepted: err.accepted.toString() }, { status: 409 });
      throw err;
    }
  },
} satisfies ExportedHandler<FenceTestEnv>;
