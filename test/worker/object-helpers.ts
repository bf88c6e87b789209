// Platform helpers for the object tests: restart one Durable Object (its storage stays), let
// the runtime hibernate one for real (evict the instance while its sockets stay open), and
// acknowledge on a watch socket synchronously with the object.
import { runInDurableObject } from "cloudflare:test";
import type { Watch } from "./router-client.ts";

/** Marks an instance so a test can tell a fresh instance (restart, eviction) from the old one. */
const MARK = Symbol.for("shiftlock.test.instance-mark");

/**
 * Restart the object behind `stub`: abort its instance (storage is kept; hibernatable sockets
 * are closed by the runtime) so that the next call constructs it again and runs its start-up.
 * Address it through a fresh stub afterwards: the aborted one stays broken.
 */
export async function restartObject(stub: DurableObjectStub): Promise<void> {
  // ctx.abort() rejects the call that made it, by design.
  await runInDurableObject(stub, (_instance, state) => state.abort("test restart")).catch(() => undefined);
}

/**
 * Restart the object behind `stub` and return a stub that reaches it by its id alone, as the
 * runtime reaches an object it starts by itself (an alarm after a restart, a deploy or an
 * eviction): the fresh instance it constructs has no `ctx.id.name`.
 */
export async function restartUnnamed<T extends Rpc.DurableObjectBranded | undefined>(
  namespace: DurableObjectNamespace<T>,
  stub: DurableObjectStub<T>,
): Promise<DurableObjectStub<T>> {
  await restartObject(stub);
  return namespace.get(namespace.idFromString(stub.id.toString()));
}

/** Milliseconds of inactivity after which workerd evicts a Durable Object (10 s) plus slack. */
const EVICTION_AFTER_MS = 11_000;

/**
 * Leave the object idle until the runtime evicts it, as production does with an idle object
 * whose hibernatable WebSockets stay open, then wake it with a fresh instance. Fails when the
 * instance was not replaced after a few idle periods. Takes about 11 s.
 */
export async function hibernate(stub: DurableObjectStub): Promise<void> {
  await runInDurableObject(stub, (instance: object) => {
    (instance as Record<symbol, boolean>)[MARK] = true;
  });
  for (let attempt = 0; attempt < 3; attempt++) {
    await new Promise((resolve) => setTimeout(resolve, EVICTION_AFTER_MS));
    // This probe wakes the object (and, if it was not evicted yet, restarts its idle timer).
    const fresh = await runInDurableObject(stub, (instance: object) => !(MARK in instance));
    if (fresh) return;
  }
  throw new Error("the object was never evicted");
}

/** Send an ack, then a ping only the object answers: its pong proves the ack was handled. */
export async function ack(w: Watch, message: object): Promise<void> {
  const before = w.messages.length;
  w.ws.send(JSON.stringify(message));
  w.ws.send('{ "type": "ping" }');
  await w.until((m) => m.slice(before).some((x: { type?: string }) => x.type === "pong"));
}
