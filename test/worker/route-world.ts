/* eslint-disable @typescript-eslint/no-explicit-any -- JSON bodies and SQL rows are inspected loosely. */
// A seeded namespace for the tests generated from the route declarations (auth matrix,
// malformed-request fuzzing): one claim held by a generation, two registered generations,
// and a held lease (with a published root on the object-store scope) in each of the three
// scope families. It builds, for any declared route, the path parameters and a body that
// addresses those objects and would change them if the request were allowed, and it dumps
// every stored row and alarm of those objects so a test can prove a request changed nothing.
import { env, exports } from "cloudflare:workers";
import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { inlineSchema } from "../../src/http/openapi.ts";
import type { Flushable } from "./test-entry.ts";
import { objectName } from "../../src/durable/object-names.ts";
import type { RouteSpec } from "../../src/protocol/route.ts";
import { fillPath, pathParamNames } from "../../src/protocol/route.ts";
import { settleListing } from "./listing-helpers.ts";
import { watchClaim } from "../../src/protocol/claim-routes.ts";

/** The token that sets the world up and reads it back (all namespaces, admin role: it may call every route). */
export const SETUP_TOKEN = "test-admin-all";

/** The JSON Schema shapes {@link sample} understands (what `inlineSchema` emits for our bodies). */
export interface JsonSchema {
  type?: string;
  pattern?: string;
  minimum?: number;
  maximum?: number;
  enum?: unknown[];
  const?: unknown;
  properties?: Record<string, JsonSchema>;
  items?: JsonSchema;
  minItems?: number;
  required?: string[];
  anyOf?: JsonSchema[];
}

/**
 * A value that satisfies `schema` (the wire form of a request body), smallest choices first;
 * a field named in `overrides` takes that value instead, wherever it occurs (an optional field
 * is included only when named there).
 */
export function sample(schema: JsonSchema, field = "", overrides: Readonly<Record<string, unknown>> = {}): unknown {
  if (field !== "" && Object.hasOwn(overrides, field)) return overrides[field];
  if (schema.const !== undefined) return schema.const;
  if (schema.enum !== undefined) return schema.enum.find((v) => v !== "") ?? schema.enum[0];
  if (schema.anyOf !== undefined) {
    return sample(schema.anyOf.find((s) => s.const !== "") ?? schema.anyOf[0]!, field, overrides);
  }
  switch (schema.type) {
    case "object": {
      const out: Record<string, unknown> = {};
      // Required fields, and optional ones the caller names (e.g. `ttlMs`, which `bound: true` may replace).
      const keys = Object.keys(schema.properties ?? {}).filter(
        (key) => (schema.required ?? []).includes(key) || Object.hasOwn(overrides, key),
      );
      for (const key of keys) out[key] = sample(schema.properties?.[key] ?? {}, key, overrides);
      return out;
    }
    case "array":
      return Array.from({ length: Math.max(schema.minItems ?? 0, 1) }, () => sample(schema.items ?? {}, "", overrides));
    case "string":
      return schema.pattern?.includes("[0-9]") === true ? "1" : `${field || "s"}-1`;
    case "integer":
    case "number":
      return Math.max(schema.minimum ?? 0, 1_000);
    case "boolean":
      return false;
    default:
      return null;
  }
}

/** The JSON Schema of a route's body (undefined when it takes none). */
export function bodySchema(route: RouteSpec): JsonSchema | undefined {
  return route.body === undefined ? undefined : inlineSchema(route.body);
}

/** The objects of one seeded namespace and the values that address them. */
export interface World {
  ns: string;
  claim: string;
  /** Owner of `claim`. */
  generation: string;
  /** A second registered generation (a transfer target). */
  successor: string;
  /** Current fencing token of `claim`, as on the wire. */
  token: string;
  service: string;
  instanceId: string;
  volumeId: string;
  objectStoreId: string;
  key: string;
  participantId: string;
  /** The held lease of each scope family, by whether the path has `/stores/` and `/keys/`. */
  leases: { store: string; volumeKey: string; storeKey: string };
}

const HOUR = 3_600_000;

async function setupCall(method: string, path: string, body: unknown): Promise<any> {
  const res = await exports.default.fetch(`http://x${path}`, {
    method,
    headers: { Authorization: `Bearer ${SETUP_TOKEN}`, "Content-Type": "application/json" },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  if (res.status >= 300) throw new Error(`seeding ${method} ${path}: ${res.status} ${text}`);
  return JSON.parse(text);
}

/** Seed a fresh namespace (`prefix-<uuid>`); every hold lasts an hour, so nothing expires. */
export async function seedWorld(prefix: string): Promise<World> {
  const id = crypto.randomUUID();
  const w: Omit<World, "token" | "leases"> = {
    ns: `${prefix}-${id}`,
    claim: `claim-${id}`,
    generation: `gen-a-${id}`,
    successor: `gen-b-${id}`,
    service: "svc",
    instanceId: "inst-1",
    volumeId: `vol-${id}`,
    objectStoreId: `store-${id}`,
    key: `key-${id}`,
    participantId: "writer",
  };
  const base = `/v1/ns/${encodeURIComponent(w.ns)}`;
  for (const gen of [w.generation, w.successor]) {
    await setupCall("POST", `${base}/generations`, { id: gen, service: w.service, instanceId: w.instanceId });
  }
  const acquired = await setupCall("POST", `${base}/claims/${w.claim}/acquire`, {
    generationId: w.generation,
    ttlMs: HOUR,
  });
  const scopes = {
    store: `${base}/volumes/${w.volumeId}/stores/${w.objectStoreId}`,
    volumeKey: `${base}/volumes/${w.volumeId}/keys/${w.key}`,
    storeKey: `${base}/volumes/${w.volumeId}/stores/${w.objectStoreId}/keys/${w.key}`,
  };
  const leases = { store: "", volumeKey: "", storeKey: "" };
  for (const family of ["store", "volumeKey", "storeKey"] as const) {
    const res = await setupCall("POST", `${scopes[family]}/leases`, { participantId: w.participantId, ttlMs: HOUR });
    leases[family] = res.lease.leaseId as string;
  }
  await setupCall("POST", `${scopes.store}/leases/${leases.store}/publish`, { root: { seeded: true } });
  const world = { ...w, token: acquired.claim.fencingToken as string, leases };
  await settleWorld(world);
  return world;
}

/**
 * Let the world's background work finish now, so that it cannot move the state of the
 * objects a route addresses between a test's before and after snapshots: only the request
 * under test may. Every object's index delivery runs to its end (otherwise it writes its
 * delivered mark in the background, between the snapshots); for a listing route the shards
 * also forward to the index (what such a route addresses). Then every alarm due soon runs —
 * an object without a deadline arms one 1 s after a change, as the safety net of its index
 * delivery (docs/listing.md). An alarm handler recomputes from the saved state, so running
 * it early changes nothing but the alarm (it re-arms for what is really due).
 */
export async function settleWorld(w: World, route?: RouteSpec): Promise<void> {
  const stubs = worldStubs(w, route);
  // Every object's delivery ends now rather than in the background (where it would write its
  // delivered mark between the snapshots); a listing route also has the shards forward.
  if (route?.tag === "listing") await settleListing(w.ns, worldStubs(w));
  else
    for (const stub of worldStubs(w)) await runInDurableObject(stub, (o) => (o as unknown as Flushable).flushIndex());
  for (const stub of stubs) {
    // Only alarms due within a test's span: not the expiries of the world's hour-long claim
    // and leases (and running an alarm costs far more than reading when it is due).
    const dueAtMs = await runInDurableObject(stub, (_instance, state) => state.storage.getAlarm());
    if (dueAtMs !== null && dueAtMs - Date.now() < SETTLE_HORIZON_MS) await runDurableObjectAlarm(stub);
  }
}

/** Alarms due sooner than this are run by {@link settleWorld}. */
const SETTLE_HORIZON_MS = 10_000;

function family(route: RouteSpec): keyof World["leases"] {
  const keyed = route.path.includes("/keys/");
  if (!keyed) return "store";
  return route.path.includes("/stores/") ? "storeKey" : "volumeKey";
}

/** The path parameters of `route` that address the world's objects. */
export function worldParams(route: RouteSpec, w: World): Record<string, string> {
  const values: Record<string, string> = {
    ns: w.ns,
    claim: w.claim,
    id: w.generation,
    volumeId: w.volumeId,
    objectStoreId: w.objectStoreId,
    key: w.key,
    leaseId: w.leases[family(route)],
  };
  return Object.fromEntries(pathParamNames(route.path).map((name) => [name, values[name] ?? `${name}-1`]));
}

/** The path of `route` addressing the world's objects. */
export function worldPath(route: RouteSpec, w: World): string {
  return fillPath(route.path, worldParams(route, w));
}

/**
 * A body for `route` built from its schema, with every field that names one of the world's
 * objects set to it: allowed, the request would change the world (release the claim, move
 * the generation, publish, …).
 */
export function worldBody(route: RouteSpec, w: World): unknown {
  const schema = bodySchema(route);
  if (schema === undefined) return undefined;
  const overrides: Record<string, unknown> = {
    generationId: w.generation,
    fromGeneration: w.generation,
    toGeneration: w.successor,
    token: w.token,
    expectedToken: w.token,
    ttlMs: HOUR,
    id: w.generation,
    service: w.service,
    instanceId: w.instanceId,
    state: "standby",
    participantId: w.participantId,
    ops: [{ op: "release", claim: w.claim, generationId: w.generation, token: w.token }],
    // A watch ticket's path: the world's claim watch.
    path: worldPath(watchClaim, w),
  };
  return sample(schema, "", overrides);
}

function generationStubs(w: World): DurableObjectStub[] {
  return [w.generation, w.successor].map((id) => env.GENERATIONS.getByName(objectName(w.ns, "generation", id)));
}

/**
 * The world's Durable Objects; with `route`, only those it can address (for a listing
 * route, the namespace's index).
 */
function worldStubs(w: World, route?: RouteSpec): DurableObjectStub[] {
  const claims = [env.CLAIMS.getByName(objectName(w.ns, "claim", w.claim))];
  const generations = generationStubs(w);
  const scopes = {
    store: env.SCOPES.getByName(objectName(w.ns, "scope", w.volumeId, w.objectStoreId, "")),
    volumeKey: env.SCOPES.getByName(objectName(w.ns, "scope", w.volumeId, "", w.key)),
    storeKey: env.SCOPES.getByName(objectName(w.ns, "scope", w.volumeId, w.objectStoreId, w.key)),
  };
  if (route === undefined) return [...claims, ...generations, ...Object.values(scopes)];
  if (route.tag === "listing") return [env.INDEX.getByName(objectName(w.ns, "index"))];
  if (route.tag === "claims") return claims;
  if (route.tag === "generations") return generations;
  if (route.tag === "coord") return [scopes[family(route)]];
  return [];
}

/**
 * Every row of every table and the alarm of each of the world's objects (with `route`, of
 * those it can address), as one string: equal before and after a request exactly when it
 * stored nothing there.
 */
export async function dumpWorld(w: World, route?: RouteSpec): Promise<string> {
  const dumps: unknown[] = [];
  for (const stub of worldStubs(w, route)) {
    dumps.push(
      await runInDurableObject(stub, async (_instance, state) => {
        const sql = state.storage.sql;
        const tables = sql
          .exec<{ name: string }>("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
          .toArray()
          .map((t) => t.name)
          .filter((name) => !name.startsWith("_cf") && !name.startsWith("sqlite_"));
        const rows = Object.fromEntries(tables.map((t) => [t, sql.exec(`SELECT * FROM "${t}"`).toArray()]));
        return { rows, alarm: await state.storage.getAlarm() };
      }),
    );
  }
  return JSON.stringify(dumps, (_k, v: unknown) => (v instanceof ArrayBuffer ? [...new Uint8Array(v)] : v));
}
