import { describe, expect, it } from "vitest";
import { LISTING_LAG_MS, checkListing, listingVerdict } from "../../torture/check/listing.ts";
import type { ListingEntry, ObjectRead } from "../../torture/history.ts";
import { owned, record } from "./histories.ts";

const QUIET = 10_000;
/** Read once, at the quiet point. */
const read = (value: unknown, sinceMs = QUIET): ObjectRead => ({ value, sinceMs });

const generation = {
  id: "g1.0",
  service: "torture",
  instanceId: "i",
  state: "active",
  startedAtMs: 1,
  updatedAtMs: 2,
  reason: "up",
};
const scopeRow = (fields: Record<string, unknown> = {}) => ({
  volumeId: "v",
  objectStoreId: "s0",
  key: "",
  generation: "3",
  held: false,
  holder: "",
  wantLock: false,
  leaseExpiresAtMs: 0,
  ...fields,
});
const stats = (claimsByPhase: Record<string, number>, generations: number, scopes: number) => ({
  lastMinute: {},
  lastHour: {},
  claimsByPhase: { unowned: 0, owned: 0, reserved: 0, draining: 0, ...claimsByPhase },
  generations,
  scopes,
});

/** c0 expired while the server was down (version 2); the listing heard of it. */
const expired = record({
  ...owned("g1", "1", "2", 1_000, 500),
  name: "c0",
  ownerGeneration: "",
  phase: "unowned",
  previousOwner: "g1",
  reason: "expired",
});
/** c1 held by g2 and renewed since its acquire (version 2 → 3); the listing shows the acquire. */
const acquired = { ...owned("g2", "4", "2", 9_000, 5_000), name: "c1" };
const renewed = { ...acquired, expiresAtMs: 19_000, lastHeartbeatMs: 14_000, reason: "renewed", version: "3" };

/** A quiet point whose listing is read `afterMs` after it, leases lapsed at the quiet point. */
function entry(afterMs: number, fields: Partial<ListingEntry> = {}): ListingEntry {
  return {
    t: "listing",
    label: "lapse 1 (lapsed)",
    quietAtMs: QUIET,
    leasesFreeAtMs: QUIET,
    listingAtMs: QUIET + afterMs,
    rounds: 1,
    objects: {
      claims: { c0: read(expired), c1: read(renewed), c2: read(null) },
      generations: { "g1.0": read(generation), "g2.0": read(null) },
      scopes: { "v/s0": read({ generation: "3", mustList: true }), "v/s1": read({ generation: "0", mustList: false }) },
    },
    listing: {
      claims: [expired, acquired],
      generations: [generation],
      scopes: [scopeRow()],
      stats: stats({ unowned: 1, owned: 1 }, 1, 1),
    },
    ...fields,
  };
}

const messages = (e: ListingEntry) => listingVerdict(e).mismatches.map((m) => `${m.object}: ${m.message}`);

describe("listing checker", () => {
  it("accepts a listing that follows its objects, deadlines and a renewal's fields trailing", () => {
    expect(listingVerdict(entry(LISTING_LAG_MS))).toEqual({ mismatches: [], pending: [] });
    expect(checkListing([entry(LISTING_LAG_MS)])).toEqual({ violations: [], checks: 1, compared: 7, unjudged: 0 });
  });

  it("reports a dropped delivery once the 2 s bound has passed, and only then", () => {
    // The expiry that fell due while the server was down never reached the listing.
    const stale = {
      ...expired,
      ownerGeneration: "g1",
      phase: "owned",
      previousOwner: "",
      reason: "acquired",
      version: "1",
    };
    const dropped = (afterMs: number) =>
      entry(afterMs, { listing: { ...entry(0).listing, claims: [stale, acquired], stats: stats({ owned: 2 }, 1, 1) } });
    expect(listingVerdict(dropped(LISTING_LAG_MS - 1))).toMatchObject({
      mismatches: [],
      pending: [{ object: "claim c0" }],
    });
    expect(messages(dropped(LISTING_LAG_MS))).toEqual([
      'claim c0: differs: ownerGeneration listed "g1", object ""; phase listed "owned", object "unowned"; previousOwner listed "", object "g1"; reason listed "acquired", object "expired"; version listed "1", object "2"',
    ]);
    const { violations, unjudged } = checkListing([dropped(LISTING_LAG_MS), dropped(LISTING_LAG_MS - 1)]);
    expect(violations.map((v) => v.message)).toEqual([expect.stringMatching(/^lapse 1 \(lapsed\): claim c0: differs/)]);
    expect(unjudged).toBe(1);
  });

  it("runs the bound from when the judge first read the object's current value", () => {
    const late = entry(LISTING_LAG_MS + 500, {
      objects: { ...entry(0).objects, claims: { ...entry(0).objects.claims, c0: read(expired, QUIET + 1_000) } },
      listing: { ...entry(0).listing, claims: [{ ...expired, version: "1" }, acquired] },
    });
    expect(listingVerdict(late)).toMatchObject({ mismatches: [], pending: [{ object: "claim c0" }] });
  });

  it("reports missing, extra and doubled entries", () => {
    const e = entry(LISTING_LAG_MS, {
      listing: {
        claims: [expired, expired, acquired, { ...expired, name: "c2" }, { ...expired, name: "zz" }],
        generations: [],
        scopes: [scopeRow(), scopeRow({ objectStoreId: "elsewhere" })],
        stats: stats({ unowned: 4, owned: 1 }, 0, 2),
      },
    });
    expect(messages(e)).toEqual([
      "claim c0: listed 2 times",
      'claim c2: listed (phase unowned, owner "", version 2), but its GET answers not found',
      "claim zz: listed, but not an object the run addresses",
      "generation g1.0: missing: GET answers state active, not listed",
      "scope v/elsewhere: listed, but not an object the run addresses",
    ]);
  });

  it("reports a scope whose lease outlived its deadline in the listing, once every lease has lapsed", () => {
    const held = scopeRow({ held: true, holder: "p8", wantLock: true, leaseExpiresAtMs: 9_500 });
    const listing = { ...entry(0).listing, scopes: [held] };
    expect(messages(entry(LISTING_LAG_MS, { listing }))).toEqual([
      'scope v/s0: differs: held listed true, object false; holder listed "p8", object ""; wantLock listed true, object false; leaseExpiresAtMs listed 9500, object 0',
    ]);
    // Before every lease of the run has lapsed only the generation is judged.
    expect(messages(entry(LISTING_LAG_MS, { listing, leasesFreeAtMs: QUIET + LISTING_LAG_MS + 1 }))).toEqual([]);
    const stale = { ...entry(0).listing, scopes: [scopeRow({ generation: "2" })] };
    expect(messages(entry(LISTING_LAG_MS, { listing: stale, leasesFreeAtMs: Infinity }))).toEqual([
      'scope v/s0: differs: generation listed "2", object "3"',
    ]);
  });

  it("reports a listed version above the object's even when the object last renewed", () => {
    const ahead = { ...entry(0).listing, claims: [expired, { ...acquired, version: "4" }] };
    expect(messages(entry(LISTING_LAG_MS, { listing: ahead }))).toEqual([
      "claim c1: listed version 4 is above the object's 3",
    ]);
  });

  it("reports /stats tallies that differ from a recount of the listing", () => {
    const listing = { ...entry(0).listing, stats: stats({ unowned: 0, owned: 2, reserved: 1 }, 2, 1) };
    expect(messages(entry(LISTING_LAG_MS, { listing }))).toEqual([
      "stats claimsByPhase.unowned: /stats shows 0, the listing holds 1",
      "stats claimsByPhase.owned: /stats shows 2, the listing holds 1",
      "stats claimsByPhase.reserved: /stats shows 1, the listing holds 0",
      "stats generations: /stats shows 2, the listing holds 1",
    ]);
  });

  it("leaves an object the judge could not read unjudged", () => {
    const e = entry(LISTING_LAG_MS + 60_000, {
      objects: {
        ...entry(0).objects,
        claims: { ...entry(0).objects.claims, c0: { value: undefined, sinceMs: QUIET, unread: true } },
      },
    });
    expect(listingVerdict(e)).toMatchObject({ mismatches: [], pending: [{ object: "claim c0" }] });
  });
});
