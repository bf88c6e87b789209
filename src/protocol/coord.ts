/**
 * Coord on the wire (SPEC §4): scopes, leases, snapshots, capability, publish bodies,
 * events and watch messages.
 *
 * Guarantees: one zod schema per request body or query, used by the router to validate and
 * by the client to type its calls; counters (epoch, generation) are `bigint` in code and
 * decimal strings on the wire, and the `…ToWire` / `…FromWire` functions here are the only
 * conversions. A root is any JSON value whose `JSON.stringify` form is at most
 * {@link ROOT_MAX_BYTES} bytes of UTF-8; `null` means "no root published".
 *
 * Does not: decide anything (see `src/coord/machine.ts`) or know about HTTP.
 */
import { z } from "zod";
import { counterOut, counterSchema, formatCounter } from "./counter.ts";
import { base64Schema, durationMsSchema, epochMsSchema, ttlMsSchema } from "./fields.ts";
import { nameSchema } from "./names.ts";

/** The capability's `backend` for this service. */
export const COORD_BACKEND = "durable-object";

/** Default lease duration when `ttlMs` is omitted (SPEC §4): 15 s. */
export const DEFAULT_LEASE_TTL_MS = 15_000;

/** Largest accepted root: 16 KiB of UTF-8 JSON text. */
export const ROOT_MAX_BYTES = 16 * 1024;

/** Publishes retained per scope for watch replay (SPEC asks for at least 256). */
export const HISTORY_RETAINED = 256;

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
 * extension to SPEC §4) names this wait with a client-chosen unguessable id
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
export type AcquireBody = z.output<typeof acquireBodySchema>;

/** `POST {scope}/leases/{leaseId}/keepalive`. Absent `ttlMs` reuses the lease's ttl. */
export const keepaliveBodySchema = z.strictObject({ ttlMs: ttlMsSchema.optional() });
export type KeepaliveBody = z.output<typeof keepaliveBodySchema>;

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
// Values in code (bigint counters)

/** A granted write lease. `epoch` is the scope's fencing token for this grant. */
export interface CoordLease {
  leaseId: string;
  epoch: bigint;
  participantId: string;
  /** Epoch ms (server clock) after which the lease is gone unless kept alive. */
  expiresAtMs: number;
}

/** The durable state readers see. `root` is `null` until a publish carries one. */
export interface CoordSnapshot {
  volumeId: string;
  objectStoreId: string;
  generation: bigint;
  root: unknown;
}

/** What the server can do for a scope (SPEC §4 capability). */
export interface CoordCapability {
  supported: boolean;
  backend: string;
  volumeId: string;
  objectStoreId: string;
  generation: bigint;
  /** True for object-store scopes (snapshot, publish, watch); false for keyed ones. */
  generations: boolean;
  detectsLoss: boolean;
  fallbackReason: string;
}

/**
 * One coord event. Exactly one of publish (generation advanced), `wantLock` or `unlocked`
 * describes it; `expired` marks an unlock caused by expiry and `replay` the single catch-up
 * event sent when history no longer reaches `afterGeneration`.
 */
export interface CoordEvent {
  processId: string;
  volumeId: string;
  objectStoreId: string;
  generation: bigint;
  wantLock: boolean;
  unlocked: boolean;
  /** The root this publish stored (or, on replay, the current root); null when none. */
  rootChanged: unknown;
  /** Base64 key prefix; "" when none. */
  keyPrefixChanged: string;
  fallbackReason: string;
  expired?: true;
  replay?: true;
}

// ---------------------------------------------------------------------------------------
// Wire forms

export const leaseWireSchema = z.strictObject({
  leaseId: z.string(),
  epoch: counterOut,
  participantId: z.string(),
  expiresAtMs: epochMsSchema,
});
export type LeaseWire = z.infer<typeof leaseWireSchema>;

export const snapshotWireSchema = z.strictObject({
  volumeId: z.string(),
  objectStoreId: z.string(),
  generation: counterOut,
  root: z.unknown(),
});
export type SnapshotWire = z.infer<typeof snapshotWireSchema>;

export const capabilityWireSchema = z.strictObject({
  supported: z.boolean(),
  backend: z.string(),
  volumeId: z.string(),
  objectStoreId: z.string(),
  generation: counterOut,
  generations: z.boolean(),
  detectsLoss: z.boolean(),
  fallbackReason: z.string(),
});
export type CapabilityWire = z.infer<typeof capabilityWireSchema>;

/** 201 body of `POST {scope}/leases`. */
export const acquireResponseSchema = z.strictObject({ lease: leaseWireSchema });
/** 200 body of keepalive. */
export const keepaliveResponseSchema = z.strictObject({ lease: leaseWireSchema, wantLock: z.boolean() });

export const eventWireSchema = z.strictObject({
  type: z.literal("event"),
  processId: z.string(),
  volumeId: z.string(),
  objectStoreId: z.string(),
  generation: counterOut,
  wantLock: z.boolean(),
  unlocked: z.boolean(),
  rootChanged: z.unknown(),
  keyPrefixChanged: z.string(),
  fallbackReason: z.string(),
  expired: z.literal(true).optional(),
  replay: z.literal(true).optional(),
});
export type EventWire = z.infer<typeof eventWireSchema>;

/** First message of every watch: the subscriber is registered at this generation. */
export const readyWireSchema = z.strictObject({ type: z.literal("ready"), generation: counterOut });
export const pongWireSchema = z.strictObject({ type: z.literal("pong") });

/**
 * Client → server: `count` = event messages (replay included) processed since the socket
 * opened. Cumulative, so a lost or repeated ack is harmless. Send one at least every few
 * hundred events; `{"type":"ping"}` is answered `{"type":"pong"}`.
 */
export const watchAckSchema = z.strictObject({ type: z.literal("ack"), count: z.number().int().min(0) });

/** Every message a coord watch can deliver. */
export const watchMessageSchema = z.discriminatedUnion("type", [readyWireSchema, eventWireSchema, pongWireSchema]);
export type WatchMessage = z.infer<typeof watchMessageSchema>;

export function leaseToWire(lease: CoordLease): LeaseWire {
  return { ...lease, epoch: formatCounter(lease.epoch) };
}

export function leaseFromWire(wire: LeaseWire): CoordLease {
  return { ...wire, epoch: BigInt(wire.epoch) };
}

export function snapshotToWire(snapshot: CoordSnapshot): SnapshotWire {
  return { ...snapshot, root: snapshot.root ?? null, generation: formatCounter(snapshot.generation) };
}

export function snapshotFromWire(wire: SnapshotWire): CoordSnapshot {
  return { ...wire, root: wire.root ?? null, generation: BigInt(wire.generation) };
}

export function capabilityToWire(capability: CoordCapability): CapabilityWire {
  return { ...capability, generation: formatCounter(capability.generation) };
}

export function capabilityFromWire(wire: CapabilityWire): CoordCapability {
  return { ...wire, generation: BigInt(wire.generation) };
}

export function eventToWire(event: CoordEvent): EventWire {
  return {
    type: "event",
    processId: event.processId,
    volumeId: event.volumeId,
    objectStoreId: event.objectStoreId,
    generation: formatCounter(event.generation),
    wantLock: event.wantLock,
    unlocked: event.unlocked,
    rootChanged: event.rootChanged ?? null,
    keyPrefixChanged: event.keyPrefixChanged,
    fallbackReason: event.fallbackReason,
    ...(event.expired === true ? { expired: true as const } : {}),
    ...(event.replay === true ? { replay: true as const } : {}),
  };
}

export function eventFromWire(wire: EventWire): CoordEvent {
  return {
    processId: wire.processId,
    volumeId: wire.volumeId,
    objectStoreId: wire.objectStoreId,
    generation: BigInt(wire.generation),
    wantLock: wire.wantLock,
    unlocked: wire.unlocked,
    rootChanged: wire.rootChanged ?? null,
    keyPrefixChanged: wire.keyPrefixChanged,
    fallbackReason: wire.fallbackReason,
    ...(wire.expired === true ? { expired: true as const } : {}),
    ...(wire.replay === true ? { replay: true as const } : {}),
  };
}
