import { describe, expect, it } from "vitest";
import {
  ROOT_MAX_BYTES,
  acquireBodySchema,
  coordEventSchema,
  eventMessageSchema,
  eventToWire,
  publishBodySchema,
  snapshotSchema,
  watchMessageSchema,
  type CoordEvent,
} from "../../src/protocol/coord.ts";

describe("coord wire schemas", () => {
  it("accepts a root of exactly 16 KiB of UTF-8 JSON text and refuses one byte more", () => {
    // "é" is two bytes of UTF-8; the JSON text adds two quote bytes.
    const fits = "é".repeat((ROOT_MAX_BYTES - 2) / 2);
    expect(publishBodySchema.safeParse({ root: fits }).success).toBe(true);
    expect(publishBodySchema.safeParse({ root: `${fits}x` }).success).toBe(false);
  });

  it("keeps an explicit null root distinct from an absent one", () => {
    const withNull = publishBodySchema.parse({ root: null });
    expect(Object.hasOwn(withNull, "root")).toBe(true);
    expect(Object.hasOwn(publishBodySchema.parse({}), "root")).toBe(false);
  });

  it("parses counters to bigint and refuses non-canonical ones", () => {
    expect(publishBodySchema.parse({ generation: "18446744073709551615" }).generation).toBe(18446744073709551615n);
    for (const bad of ["007", "-1", "1.0", "0x1", "", "18446744073709551616"]) {
      expect(publishBodySchema.safeParse({ expectedGeneration: bad }).success, bad).toBe(false);
    }
    expect(publishBodySchema.safeParse({ keyPrefixChanged: "abc" }).success).toBe(false);
    expect(publishBodySchema.safeParse({ keyPrefixChanged: "YWJj" }).success).toBe(true);
  });

  it("acquire bodies: names, ttl range, waitMs and waiterId", () => {
    expect(acquireBodySchema.safeParse({ participantId: "p", ttlMs: 100, waitMs: 0, waiterId: "w" }).success).toBe(
      true,
    );
    expect(acquireBodySchema.safeParse({ participantId: "p", ttlMs: 99 }).success).toBe(false);
    expect(acquireBodySchema.safeParse({ participantId: "p\u0000" }).success).toBe(false);
    expect(acquireBodySchema.safeParse({ participantId: "p", waiterId: "" }).success).toBe(false);
    expect(acquireBodySchema.safeParse({ participantId: "p", other: 1 }).success).toBe(false);
  });

  it("round-trips events and snapshots through their wire forms", () => {
    const event: CoordEvent = {
      processId: "w",
      volumeId: "v",
      objectStoreId: "s",
      generation: 2n ** 63n,
      wantLock: false,
      unlocked: true,
      rootChanged: { a: [1, 2] },
      keyPrefixChanged: "YQ==",
      fallbackReason: "",
      expired: true,
    };
    const wire = eventToWire(event);
    expect(wire).toMatchObject({ type: "event", generation: "9223372036854775808", expired: true });
    expect(wire).not.toHaveProperty("replay");
    expect(eventMessageSchema.encode(eventMessageSchema.decode(wire))).toEqual(wire);
    expect(coordEventSchema.decode(wire)).toEqual(event);
    const snapshot = { volumeId: "v", objectStoreId: "s", generation: 3n, root: null };
    expect(snapshotSchema.decode(snapshotSchema.encode(snapshot))).toEqual(snapshot);
    expect(snapshotSchema.encode(snapshot)).toEqual({ ...snapshot, generation: "3" });
    expect(watchMessageSchema.decode({ type: "ready", generation: "3" })).toEqual({ type: "ready", generation: 3n });
  });
});
