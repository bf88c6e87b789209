// Counts what one Durable Object operation costs in storage, from the storage API's own
// counters: the rows every SQL cursor read and wrote (`SqlStorageCursor.rowsRead` /
// `rowsWritten`, what SQLite-backed Durable Objects are billed on), how many
// `transactionSync` calls ran, and any write made outside one (which would be a second
// commit of the same mutation).
import { runInDurableObject } from "cloudflare:test";
import type { DurableObject } from "cloudflare:workers";

/** What one metered call cost. */
export interface StorageCost {
  rowsRead: number;
  rowsWritten: number;
  /** `transactionSync` calls (nested ones included). */
  transactions: number;
  /** Statements that wrote rows outside any `transactionSync`: each is a commit of its own. */
  writesOutsideTransaction: number;
  /** `setAlarm` calls (each is a durable write of the alarm, outside SQL). */
  alarmWrites: number;
  /** Key-value API writes (`put`, `delete`, `deleteAll`): shiftlock uses SQL only. */
  kvWrites: number;
}

/**
 * Run `fn` inside the object behind `stub` with its storage metered, and return what it
 * returned and what it cost. Cursors are summed after `fn` settles, when each has been read
 * to its end by the code under test.
 */
export async function metered<O extends DurableObject, T>(
  stub: DurableObjectStub<O>,
  fn: (instance: O) => Promise<T> | T,
): Promise<{ result: T; cost: StorageCost }> {
  return runInDurableObject<O, { result: T; cost: StorageCost }>(stub, async (instance, state) => {
    const storage = state.storage;
    const sql = storage.sql;
    const cursors: SqlStorageCursor<Record<string, SqlStorageValue>>[] = [];
    const outside: SqlStorageCursor<Record<string, SqlStorageValue>>[] = [];
    const cost: StorageCost = {
      rowsRead: 0,
      rowsWritten: 0,
      transactions: 0,
      writesOutsideTransaction: 0,
      alarmWrites: 0,
      kvWrites: 0,
    };
    let depth = 0;
    const exec = sql.exec.bind(sql);
    const transactionSync = storage.transactionSync.bind(storage);
    const setAlarm = storage.setAlarm.bind(storage);
    // Wrappers are own properties shadowing the prototype's methods until `finally` drops them.
    Object.assign(sql, {
      exec: (query: string, ...bindings: unknown[]) => {
        const cursor = exec(query, ...bindings);
        cursors.push(cursor);
        if (depth === 0) outside.push(cursor);
        return cursor;
      },
    });
    Object.assign(storage, {
      transactionSync: <R>(closure: () => R): R => {
        cost.transactions++;
        depth++;
        try {
          return transactionSync(closure);
        } finally {
          depth--;
        }
      },
      setAlarm: (...args: Parameters<typeof setAlarm>) => {
        cost.alarmWrites++;
        return setAlarm(...args);
      },
      put: () => {
        cost.kvWrites++;
        throw new Error("metered: unexpected key-value put");
      },
      delete: () => {
        cost.kvWrites++;
        throw new Error("metered: unexpected key-value delete");
      },
      deleteAll: () => {
        cost.kvWrites++;
        throw new Error("metered: unexpected key-value deleteAll");
      },
    });
    try {
      const result = await fn(instance);
      for (const cursor of cursors) {
        cost.rowsRead += cursor.rowsRead;
        cost.rowsWritten += cursor.rowsWritten;
      }
      cost.writesOutsideTransaction = outside.filter((c) => c.rowsWritten > 0).length;
      return { result, cost };
    } finally {
      Reflect.deleteProperty(sql, "exec");
      for (const name of ["transactionSync", "setAlarm", "put", "delete", "deleteAll"]) {
        Reflect.deleteProperty(storage, name);
      }
    }
  });
}
