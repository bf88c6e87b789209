/**
 * The coord client's values ⇄ the protocol's: what the Go interface's types say differently from
 * the wire schemas (after those schemas decoded the counters).
 *
 * Guarantees: an event's `rootChanged: null` becomes `undefined` ("no root in this event")
 * and its base64 `keyPrefixChanged` becomes bytes (`""` → `undefined`); `expired` and
 * `replay` are present only when true. A publish request's bytes become base64. The HTTP
 * and in-memory coordinators both go through these functions, so callers get identical
 * values from either.
 *
 * Does not: validate (the route schemas do, before and after these conversions).
 */
import type { CoordEvent as WireEvent, PublishBody } from "../../protocol/coord.ts";
import { ShiftlockError } from "../../protocol/errors.ts";
import type { CoordEvent, PublishRequest } from "./coord-types.ts";

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

/** A decoded wire event as the client hands it out. */
export function toClientEvent(wire: WireEvent): CoordEvent {
  let keyPrefixChanged: Uint8Array | undefined;
  try {
    keyPrefixChanged = wire.keyPrefixChanged === "" ? undefined : fromBase64(wire.keyPrefixChanged);
  } catch {
    throw new ShiftlockError("internal", "malformed watch message: keyPrefixChanged is not base64");
  }
  const event: CoordEvent = {
    processId: wire.processId,
    volumeId: wire.volumeId,
    objectStoreId: wire.objectStoreId,
    generation: wire.generation,
    wantLock: wire.wantLock,
    unlocked: wire.unlocked,
    rootChanged: wire.rootChanged === null ? undefined : wire.rootChanged,
    keyPrefixChanged,
    fallbackReason: wire.fallbackReason,
  };
  if (wire.expired === true) event.expired = true;
  if (wire.evicted === true) event.evicted = true;
  if (wire.note !== undefined) event.note = wire.note;
  if (wire.replay === true) event.replay = true;
  return event;
}

/** The publish body (code form: counters stay bigint, the route's schema encodes them). */
export function publishBody(req: PublishRequest): PublishBody {
  const body: PublishBody = {};
  if (req.generation !== undefined) body.generation = req.generation;
  if (req.expectedGeneration !== undefined) body.expectedGeneration = req.expectedGeneration;
  if (req.root !== undefined) body.root = req.root;
  if (req.keyPrefixChanged !== undefined) body.keyPrefixChanged = toBase64(req.keyPrefixChanged);
  return body;
}
