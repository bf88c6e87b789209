/**
 * Per-object counters for the scale model (`npm run bench:scale`, docs/scale.md): what each
 * Durable Object did, as JSON log lines, so that the counts that transfer to Cloudflare —
 * requests per object, alarms, SQLite rows, listing deliveries, WebSocket frames, the time an
 * object could not hibernate — are counted, never sampled.
 *
 * Guarantees:
 * - Off unless `OBJECT_METER = "on"` (the bench's local server sets it): then every metered
 *   entry point (see {@link meterMethods}) writes one line `{"meter":1, obj, op, startMs,
 *   durMs, rowsRead, rowsWritten, frames, deliveries, alarmsSet}` when it settles
 *   (`alarmsSet`: alarm writes, which the platform bills like a row written). Rows are summed from
 *   the cursors of every statement the object ran since its previous line, so each object's
 *   totals are exact, while a line's share may include statements of calls that interleaved
 *   with it (a waiting coord acquire spans others).
 * - Off, it costs one branch per call and writes nothing.
 *
 * Does not: measure CPU or wall time precisely (`durMs` is the object clock's view of one
 * call, used only to add up the time an object was busy), or count what the runtime does
 * outside JavaScript (its own hibernation bookkeeping).
 */
import { systemClock } from "../core/clock.ts";

/** What one object counts between two lines. */
interface Tally {
  rowsRead: number;
  rowsWritten: number;
  frames: number;
  deliveries: number;
  alarmsSet: number;
}

function emptyTally(): Tally {
  return { rowsRead: 0, rowsWritten: 0, frames: 0, deliveries: 0, alarmsSet: 0 };
}

export class ObjectMeter {
  readonly enabled: boolean;
  private cursors: SqlStorageCursor<Record<string, SqlStorageValue>>[] = [];
  private tally: Tally = emptyTally();

  constructor(
    private readonly ctx: DurableObjectState,
    env: Env,
  ) {
    this.enabled = (env as { OBJECT_METER?: string }).OBJECT_METER === "on";
    if (this.enabled) this.watchSql();
  }

  /** Count frames sent, listing deliveries made or alarms written. */
  add(what: "frames" | "deliveries" | "alarmsSet", n = 1): void {
    if (this.enabled) this.tally[what] += n;
  }

  /** Run `call` as one metered entry point named `op`. */
  async run<T>(op: string, call: () => T | Promise<T>): Promise<T> {
    if (!this.enabled) return call();
    const startMs = systemClock.nowMs();
    try {
      return await call();
    } finally {
      this.line(op, startMs);
    }
  }

  private line(op: string, startMs: number): void {
    for (const c of this.cursors) {
      this.tally.rowsRead += c.rowsRead;
      this.tally.rowsWritten += c.rowsWritten;
    }
    this.cursors = [];
    const durMs = systemClock.nowMs() - startMs;
    const obj = this.ctx.id.name ?? this.ctx.id.toString();
    // eslint-disable-next-line no-console
    console.log(JSON.stringify({ meter: 1, obj, op, startMs, durMs, ...this.tally }));
    this.tally = emptyTally();
  }

  /** Keep every cursor the object's SQL returns, to sum its rows at the next line. */
  private watchSql(): void {
    const sql = this.ctx.storage.sql;
    const exec = sql.exec.bind(sql);
    const cursors = (): typeof this.cursors => this.cursors;
    Object.defineProperty(sql, "exec", {
      configurable: true,
      value: <T extends Record<string, SqlStorageValue>>(query: string, ...bindings: unknown[]) => {
        const cursor = exec<T>(query, ...bindings);
        cursors().push(cursor);
        return cursor;
      },
    });
  }
}

/** An object with a meter. */
interface Metered {
  readonly meter: ObjectMeter;
}

/**
 * Wrap the named methods of a Durable Object class so each call is one metered entry point.
 * Call once per class, next to it. The wrapped method is async (RPC callers await anyway).
 */
export function meterMethods<C extends Metered>(proto: C, names: readonly (keyof C & string)[]): void {
  for (const name of names) {
    const original = proto[name] as unknown as (this: C, ...args: unknown[]) => unknown;
    Object.defineProperty(proto, name, {
      configurable: true,
      writable: true,
      value: function (this: C, ...args: unknown[]) {
        if (!this.meter.enabled) return original.apply(this, args);
        return this.meter.run(name, () => original.apply(this, args));
      },
    });
  }
}
