/**
 * The platform's floor: the lock a Workers user would write instead of adopting shiftlock —
 * one SQLite-backed Durable Object per lock name, a fencing token, a ttl, the owner checked
 * on release. bench:peers serves it with the same Miniflare and workerd as shiftlock and
 * drives it with the same closed loop.
 *
 *   POST /locks/{name}/acquire {"owner":O,"ttlMs":T} → 200 {"token":N,"expiresAtMs":E,"rows":R} | 409
 *   POST /locks/{name}/release {"owner":O,"token":N} → 200 {"released":true,"rows":R} | 409
 *
 * (`rows`: the SQLite rows the call read and wrote, `{read, written}`, for bench:cost.)
 *
 * Guarantees: the token grows by one per grant; an expired lock is granted again (checked
 * when asked, no alarm); release by anyone but the holder of that token is refused.
 * Does not: authenticate, validate more than it needs, keep history, watch, hand over, or
 * list — which is the point of comparing with it.
 */
import { DurableObject } from "cloudflare:workers";

export class Lock extends DurableObject {
  /** @param {DurableObjectState} ctx @param {Env} env */
  constructor(ctx, env) {
    super(ctx, env);
    this.sql = ctx.storage.sql;
    this.sql.exec(
      "CREATE TABLE IF NOT EXISTS lock (id INTEGER PRIMARY KEY, owner TEXT, token INTEGER, expires INTEGER)",
    );
  }

  /** @param {string} owner @param {number} ttlMs */
  acquire(owner, ttlMs) {
    const now = Date.now();
    const read = this.sql.exec("SELECT owner, token, expires FROM lock WHERE id = 1");
    const row = read.toArray()[0];
    if (row && row.owner !== null && Number(row.expires) > now && row.owner !== owner) return null;
    const token = (row ? Number(row.token) : 0) + 1;
    const expiresAtMs = now + ttlMs;
    const write = this.sql.exec(
      "INSERT OR REPLACE INTO lock (id, owner, token, expires) VALUES (1, ?, ?, ?)",
      owner,
      token,
      expiresAtMs,
    );
    // The rows SQLite billed, for bench:cost.
    const rows = { read: read.rowsRead + write.rowsRead, written: read.rowsWritten + write.rowsWritten };
    return { token, expiresAtMs, rows };
  }

  /** @param {string} owner @param {number} token */
  release(owner, token) {
    const read = this.sql.exec("SELECT owner, token FROM lock WHERE id = 1");
    const row = read.toArray()[0];
    if (!row || row.owner !== owner || Number(row.token) !== token) return undefined;
    const write = this.sql.exec("UPDATE lock SET owner = NULL, expires = 0 WHERE id = 1");
    return { read: read.rowsRead + write.rowsRead, written: read.rowsWritten + write.rowsWritten };
  }
}

export default {
  /** @param {Request} request @param {{ LOCKS: DurableObjectNamespace<Lock> }} env */
  async fetch(request, env) {
    const m = /^\/locks\/([^/]+)\/(acquire|release)$/.exec(new URL(request.url).pathname);
    if (!m || request.method !== "POST") return new Response("not found", { status: 404 });
    const body = await request.json();
    const stub = env.LOCKS.getByName(decodeURIComponent(m[1] ?? ""));
    if (m[2] === "acquire") {
      const grant = await stub.acquire(String(body.owner), Number(body.ttlMs));
      return grant ? Response.json(grant) : Response.json({ error: "held" }, { status: 409 });
    }
    const rows = await stub.release(String(body.owner), Number(body.token));
    return rows ? Response.json({ released: true, rows }) : Response.json({ error: "not_owner" }, { status: 409 });
  },
};
