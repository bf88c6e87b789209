/**
 * Coord wire forms on the client side: answers and watch messages → the client's types,
 * and the publish body ← `PublishRequest`.
 *
 * Guarantees: counters become `bigint`; an event's `rootChanged: null` becomes `undefined`
 * ("no root in this event") and its base64 `keyPrefixChanged` becomes bytes (`""` →
 * `undefined`). A body that is not the documented shape rejects with code `internal` (a
 * server or proxy bug). The in-memory coordinator encodes through the same wire forms, so
 * both implementations hand callers identical values.
 *
 * Does not: reject unknown extra fields (a newer server may add some).
 */
import { parseCounter } from "../../protocol/counter.ts";
import { ShiftlockError } from "../../protocol/errors.ts";
import { formatCounter } from "../../protocol/counter.ts";
import type { Capability, CoordEvent, PublishRequest, Snapshot } from "./coord-types.ts";
import type { LeaseGrant } from "./write-lease.ts";

const malformed = (what: string): ShiftlockError => new ShiftlockError("internal", `malformed response: ${what}`);

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === "object" && !Array.isArray(v);
}

function obj(v: unknown, what: string): Record<string, unknown> {
  if (!isObject(v)) throw malformed(`${what} is not an object`);
  return v;
}

function counter(o: Record<string, unknown>, key: string): bigint {
  const v = o[key];
  const parsed = typeof v === "string" ? parseCounter(v) : undefined;
  if (parsed === undefined) throw malformed(`${key} is not a counter`);
  return parsed;
}

function str(o: Record<string, unknown>, key: string): string {
  const v = o[key];
  if (typeof v !== "string") throw malformed(`${key} is not a string`);
  return v;
}

function bool(o: Record<string, unknown>, key: string): boolean {
  const v = o[key];
  if (typeof v !== "boolean") throw malformed(`${key} is not a boolean`);
  return v;
}

function num(o: Record<string, unknown>, key: string): number {
  const v = o[key];
  if (typeof v !== "number" || !Number.isFinite(v)) throw malformed(`${key} is not a number`);
  return v;
}

/** Standard base64 → bytes (`atob` exists in Workers, browsers and Node ≥ 16). */
export function fromBase64(text: string): Uint8Array {
  const binary = atob(text);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

/** Bytes → standard base64 with padding. */
export function toBase64(bytes: Uint8Array): string {
  let binary = "";
  for (let i = 0; i < bytes.length; i += 0x8000) {
    binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  }
  return btoa(binary);
}

export function decodeLease(wire: unknown): LeaseGrant {
  const o = obj(wire, "lease");
  return {
    leaseId: str(o, "leaseId"),
    epoch: counter(o, "epoch"),
    participantId: str(o, "participantId"),
    expiresAtMs: num(o, "expiresAtMs"),
  };
}

/** `{lease}` (acquire) → the grant. */
export function decodeAcquireAnswer(body: unknown): LeaseGrant {
  return decodeLease(obj(body, "body")["lease"]);
}

/** `{lease, wantLock}` (keepalive). */
export function decodeKeepaliveAnswer(body: unknown): { lease: LeaseGrant; wantLock: boolean } {
  const o = obj(body, "body");
  return { lease: decodeLease(o["lease"]), wantLock: bool(o, "wantLock") };
}

export function decodeSnapshot(body: unknown): Snapshot {
  const o = obj(body, "snapshot");
  return {
    volumeId: str(o, "volumeId"),
    objectStoreId: str(o, "objectStoreId"),
    generation: counter(o, "generation"),
    root: o["root"] ?? null,
  };
}

export function decodeCapability(body: unknown): Capability {
  const o = obj(body, "capability");
  return {
    supported: bool(o, "supported"),
    backend: str(o, "backend"),
    volumeId: str(o, "volumeId"),
    objectStoreId: str(o, "objectStoreId"),
    generation: counter(o, "generation"),
    generations: bool(o, "generations"),
    detectsLoss: bool(o, "detectsLoss"),
    fallbackReason: str(o, "fallbackReason"),
  };
}

/** A `{"type":"event",…}` watch message → CoordEvent. */
export function decodeEvent(wire: unknown): CoordEvent {
  const o = obj(wire, "event");
  const prefix = str(o, "keyPrefixChanged");
  let keyPrefixChanged: Uint8Array | undefined;
  try {
    keyPrefixChanged = prefix === "" ? undefined : fromBase64(prefix);
  } catch {
    throw malformed("keyPrefixChanged is not base64");
  }
  const root = o["rootChanged"];
  const event: CoordEvent = {
    processId: str(o, "processId"),
    volumeId: str(o, "volumeId"),
    objectStoreId: str(o, "objectStoreId"),
    generation: counter(o, "generation"),
    wantLock: bool(o, "wantLock"),
    unlocked: bool(o, "unlocked"),
    rootChanged: root === null ? undefined : root,
    keyPrefixChanged,
    fallbackReason: str(o, "fallbackReason"),
  };
  if (o["expired"] === true) event.expired = true;
  if (o["replay"] === true) event.replay = true;
  return event;
}

/** The publish body on the wire (bigint → decimal string, bytes → base64, absent root omitted). */
export function publishBody(req: PublishRequest): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  if (req.generation !== undefined) body["generation"] = formatCounter(req.generation);
  if (req.expectedGeneration !== undefined) body["expectedGeneration"] = formatCounter(req.expectedGeneration);
  if (req.root !== undefined) body["root"] = req.root;
  if (req.keyPrefixChanged !== undefined) body["keyPrefixChanged"] = toBase64(req.keyPrefixChanged);
  return body;
}
