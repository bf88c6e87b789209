/**
 * Coord on the wire (docs/protocol.md#coord): scopes, leases, snapshots, capability, publish bodies,
 * events and watch messages.
 *
 * Guarantees: one zod schema per shape, used by the router to validate, by OpenAPI to
 * describe and by the client to encode requests and decode answers; counters (epoch,
 * generation) are codecs, `bigint` in code and decimal strings on the wire. A root is any JSON value whose `JSON.stringify` form is at most
 * {@link ROOT_MAX_BYTES} bytes of UTF-8; `null` means "no root published".
 *
 * Does not: decide anything (see `src/core/scope-machine.ts`) or know about HTTP.
 */
import { z } from "zod";
import { counterSchema } from "./counter.ts";
import { base64Schema, durationMsSchema, epochMsSchema, ttlMsSchema } from "./fields.ts";
import { nameSchema } from "./names.ts";
import { pingMessageSchema, pongMessageSchema } from "./watch.ts";

/** The capability's `backend` for this service. */
export const COORD_BACKEND = "durable-object";

/** Default lease duration when `ttlMs` is omitted (docs/protocol.md#coord): 15 s. */
export const DEFAULT_LEASE_TTL_MS = 15_000;

/** Largest accepted root: 16 KiB of UTF-8 JSON text. */
export const ROOT_MAX_BYTES = 16 * 1024;

/**
 * A scope's identity. `objectStoreId` and `key` are `""` when absent (names are ≥ 1 byte,
 * so `""` can never collide with a real id). A scope with a `key` is keyed (mutual exclusion
 * only), whether or not it also names a store.
 */
export interface ScopeId {
  volumeId: string;
  objectStoreId: string;
  key: string;
}

/** True for keyed scopes: no generation, root, snapshot, publish or watch. */
export function isKeyedScope(scope: ScopeId): boolean {
  return scope.key !== "";
}

const encoder = new TextEncoder();

/** UTF-8 size of a JSON value's text, or undefined when it is not serialisable JSON. */
export function jsonByteLength(value: unknown): number | undefined {
  try {
    const text = JSON.stringify(value);
    return text === undefined ? undefined : encoder.encode(text).byteLength;
  } catch {
    return undefined;
  }
}

/** A published root: any JSON value, at most {@link ROOT_MAX_BYTES} bytes as text. */
export const rootSchema = z.unknown().superRefine((value, ctx) => {
  const size = jsonByteLength(value);
  if (size === undefined) ctx.addIssue({ code: "custom", message: "must be a JSON value" });
  else if (size > ROOT_MAX_BYTES) ctx.addIssue({ code: "custom", message: `must be at most ${ROOT_MAX_BYTES} bytes` });
});

// ---------------------------------------------------------------------------------------
// Requests

/**
 * `POST {scope}/leases`. `waitMs` 0 or absent = try once. `waiterId` (optional, an
 * extension to docs/protocol.md#coord) names this wait with a client-chosen unguessable id
 * (`crypto.randomUUID()`): `DELETE {scope}/leases/{waiterId}` then cancels the wait, or gives
 * back the lease if it was granted while the caller was leaving. Clients should send it
 * whenever `waitMs > 0`, because not every proxy reports a client's disconnect to the server.
 */
export const acquireBodySchema = z.strictObject({
  participantId: nameSchema,
  ttlMs: ttlMsSchema.optional(),
  waitMs: durationMsSchema.optional(),
  waiterId: nameSchema.optional(),
});

/** `POST {scope}/leases/{leaseId}/keepalive`. Absent `ttlMs` reuses the lease's ttl. */
export const keepaliveBodySchema = z.strictObject({ ttlMs: ttlMsSchema.optional() });

/** `POST {scope}/leases/{leaseId}/refresh` takes no fields. */
export const refreshBodySchema = z.strictObject({});

/** `POST {scope}/leases/{leaseId}/publish`. */
export const publishBodySchema = z.strictObject({
  generation: counterSchema.optional(),
  expectedGeneration: counterSchema.optional(),
  root: rootSchema.optional(),
  keyPrefixChanged: base64Schema.optional(),
});
export type PublishBody = z.output<typeof publishBodySchema>;

/** `GET {scope}/watch?afterGeneration=N` (absent = live events only, no replay). */
export const watchQuerySchema = z.strictObject({ afterGeneration: counterSchema.optional() });

// ---------------------------------------------------------------------------------------
// Answers and events: decimal-string counters on the wire, `bigint` in code (codecs)

/** A stored root as it travels in answers: any JSON value, `null` when none was published. */
const storedRootSchema = z.codec(z.unknown(), z.unknown(), {
  decode: (value) => value ?? null,
  encode: (value) => value ?? null,
});

/** A granted write lease. `epoch` is the scope's fencing token for this grant. */
export const leaseSchema = z.object({
  leaseId: z.string(),
  epoch: counterSchema,
  participantId: z.string(),
  expiresAtMs: epochMsSchema.describe("epoch ms (server clock) after which the lease is gone unless kept alive"),
});
export type CoordLease = z.output<typeof leaseSchema>;

/** The durable state readers see. `root` is `null` until a publish carries one. */
export const snapshotSchema = z.object({
  volumeId: z.string(),
  objectStoreId: z.string(),
  generation: counterSchema,
  root: storedRootSchema,
});
export type CoordSnapshot = z.output<typeof snapshotSchema>;

/** What the server can do for a scope (docs/protocol.md#coord). */
export const capabilitySchema = z.object({
  supported: z.boolean(),
  backend: z.string(),
  volumeId: z.string(),
  objectStoreId: z.string(),
  generation: counterSchema,
  /** True for object-store scopes (snapshot, publish, watch); false for keyed ones. */
  generations: z.boolean(),
  detectsLoss: z.boolean(),
  fallbackReason: z.string(),
});
export type CoordCapability = z.output<typeof capabilitySchema>;

/** 201 body of `POST {scope}/leases`. */
export const acquireResponseSchema = z.object({ lease: leaseSchema });
/** 200 body of keepalive. */
export const keepaliveResponseSchema = z.object({ lease: leaseSchema, wantLock: z.boolean() });

/**
 * One coord event. Exactly one of publish (generation advanced), `wantLock` or `unlocked`
 * describes it; `expired` marks an unlock caused by expiry, `evicted` (with `note`) one an
 * operator caused, and `replay` the single catch-up
 * event sent when history no longer reaches `afterGeneration`.
 */
export const coordEventSchema = z.object({
  processId: z.string(),
  volumeId: z.string(),
  objectStoreId: z.string(),
  generation: counterSchema,
  wantLock: z.boolean(),
  unlocked: z.boolean(),
  /** The root this publish stored (or, on replay, the current root); null when none. */
  rootChanged: storedRootSchema,
  /** Base64 key prefix; "" when none. */
  keyPrefixChanged: z.string(),
  fallbackReason: z.string(),
  expired: z.literal(true).optional(),
  /** With `unlocked`: an operator evicted the holder (docs/protocol.md#eviction). */
  evicted: z.literal(true).optional(),
  /** With `evicted`: the operator's note, when one was given. */
  note: z.string().optional(),
  replay: z.literal(true).optional(),
});
export type CoordEvent = z.output<typeof coordEventSchema>;

/** Watch, server → client: one event. */
export const eventMessageSchema = coordEventSchema.extend({ type: z.literal("event") });
export type EventWire = z.input<typeof eventMessageSchema>;

/** Watch, server → client, first message: the subscriber is registered at this generation. */
export const readyMessageSchema = z.object({ type: z.literal("ready"), generation: counterSchema });

/**
 * Watch, client → server (docs/protocol.md#watch-flow-control): `count` = event messages processed since the last ack.
 * Send one at least every few hundred events; `{"type":"ping"}` is answered `{"type":"pong"}`.
 */
export const watchAckSchema = z.strictObject({ type: z.literal("ack"), count: z.number().int().min(0) });
export const coordWatchClientMessageSchema = z.discriminatedUnion("type", [pingMessageSchema, watchAckSchema]);

/** Every message a coord watch can deliver. */
export const watchMessageSchema = z.discriminatedUnion("type", [
  readyMessageSchema,
  eventMessageSchema,
  pongMessageSchema,
]);
export type WatchMessage = z.output<typeof watchMessageSchema>;

/** The wire form of an event message (the codec's `encode`). */
export function eventToWire(event: CoordEvent): EventWire {
  return eventMessageSchema.encode({ ...event, type: "event" });
}
