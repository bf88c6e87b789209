/**
 * The listing judge, online: at a quiet point (clients stopped: quiet.ts) it reads every
 * object the run addresses — claims and generations by `GET`, scopes by their snapshot —
 * and then the namespace's whole listing (every page) and `/stats`, round after round, until
 * check/listing.ts has nothing left to wait for: every difference gone, or due (past the
 * listing's 2 s bound). The last round is the history entry it returns; the checker judges
 * that entry again offline, so `--check` gives the same verdict.
 *
 * Guarantees:
 * - Every round reads every object afresh, so a change during the poll (a deadline falling
 *   due, a watcher's connect applying an expiry) moves that object's `sinceMs`, and with it
 *   the bound: nothing is judged against a value the object no longer has.
 * - Returns no earlier than `leasesFreeAtMs` (so the scopes' lease fields are judged) and no
 *   later than {@link GIVE_UP_MS} after the bound of the last change it saw: an object that
 *   never answers is left unjudged (pending), never counted as a mismatch.
 * - Reads only: object `GET`s (which apply expiry, as every read does) and the listing routes.
 *
 * Does not: stop the clients (the caller closes the gate first) or decide what a mismatch is.
 */
import { getClaim } from "../../src/protocol/claim-routes.ts";
import { getGeneration } from "../../src/protocol/generation-routes.ts";
import { LIST_LIMIT_MAX } from "../../src/protocol/listing.ts";
import { listClaims, listGenerations, listScopes, namespaceStats } from "../../src/protocol/listing-routes.ts";
import { SCOPE_ROUTE_FAMILIES } from "../../src/protocol/scope-routes.ts";
import { listingVerdict } from "./check/listing.ts";
import type { ListingEntry, ObjectRead } from "./history.ts";
import { sleep } from "./server-process.ts";
import { perform, type Call } from "./wire.ts";
import type { Knowledge, KeySpace } from "./workload.ts";

/** Pause between two rounds. */
const ROUND_MS = 200;
/** How long past the last bound the judge keeps trying to read an object that does not answer. */
export const GIVE_UP_MS = 10_000;
/** Object reads in flight at once. */
const READS_IN_FLIGHT = 4;

export interface ProbeContext {
  baseUrl: () => string;
  keys: KeySpace;
  knowledge: Knowledge;
  /** Client-side timeout of one read (ms). */
  timeoutMs: number;
}

export interface QuietPoint {
  /** `lapse <n> (<mode>)` or `end`. */
  label: string;
  /** From when only the judge (and the watchers' reads) call the server (history.ts `ListingEntry`). */
  quietAtMs: number;
  /** From when no lease or queued wait of the run can be live. */
  leasesFreeAtMs: number;
}

type Kind = keyof ListingEntry["objects"];

/** Poll until the listing is judged (see the module comment); returns the last round. */
export async function judgeListing(ctx: ProbeContext, point: QuietPoint): Promise<ListingEntry> {
  const ns = ctx.keys.namespace;
  const objects: ListingEntry["objects"] = { claims: {}, generations: {}, scopes: {} };
  for (let rounds = 1; ; rounds++) {
    await readObjects(ctx, objects);
    const listingAtMs = Date.now();
    const listing = await readListing(ctx, ns);
    if (listing !== undefined) {
      const entry: ListingEntry = {
        t: "listing",
        ...point,
        listingAtMs,
        rounds,
        objects: structuredClone(objects),
        listing,
      };
      const { pending } = listingVerdict(entry);
      if (pending.length === 0 && listingAtMs >= point.leasesFreeAtMs) return entry;
      const lastBound = Math.max(point.leasesFreeAtMs, ...pending.map((m) => m.dueMs).filter(Number.isFinite));
      if (Date.now() > lastBound + GIVE_UP_MS) return entry;
    }
    await sleep(ROUND_MS);
  }
}

/** Read every object the run addresses into `objects`, keeping each value's first-read time. */
async function readObjects(ctx: ProbeContext, objects: ListingEntry["objects"]): Promise<void> {
  const ns = ctx.keys.namespace;
  const scope = SCOPE_ROUTE_FAMILIES.store.snapshot;
  const reads: { kind: Kind; name: string; call: Call; value: (body: unknown) => unknown; missing: string }[] = [
    ...ctx.keys.claims.map((claim) => ({
      kind: "claims" as const,
      name: claim,
      call: { method: "GET" as const, path: getClaim.path, params: { ns, claim } },
      value: (body: unknown) => (body as { claim: unknown }).claim,
      missing: "claim_not_found",
    })),
    ...[...ctx.knowledge.sessionGenerations, ...ctx.knowledge.registryIds(ctx.keys.generations)].map((id) => ({
      kind: "generations" as const,
      name: id,
      call: { method: "GET" as const, path: getGeneration.path, params: { ns, id } },
      value: (body: unknown) => (body as { generation: unknown }).generation,
      missing: "generation_not_found",
    })),
    ...ctx.keys.scopes.map((name) => {
      const [volumeId = "", objectStoreId = ""] = name.split("/");
      return {
        kind: "scopes" as const,
        name,
        call: { method: "GET" as const, path: scope.path, params: { ns, volumeId, objectStoreId } },
        value: (body: unknown) => {
          const generation = (body as { generation: string }).generation;
          return { generation, mustList: BigInt(generation) > 0n || ctx.knowledge.granted.has(name) };
        },
        missing: "",
      };
    }),
  ];
  let next = 0;
  const worker = async (): Promise<void> => {
    for (let i = next++; i < reads.length; i = next++) {
      const read = reads[i]!;
      const askedMs = Date.now();
      const outcome = await perform(ctx.baseUrl(), read.call, ctx.timeoutMs);
      const atMs = Date.now();
      let value: unknown;
      if (outcome.type === "ok") value = read.value(outcome.body);
      else if (outcome.type === "error" && outcome.code === read.missing) value = null;
      const prior: ObjectRead | undefined = objects[read.kind][read.name];
      if (value === undefined) {
        const readAtMs = prior?.readAtMs === undefined ? {} : { readAtMs: prior.readAtMs };
        objects[read.kind][read.name] = {
          value: prior?.value,
          sinceMs: prior?.sinceMs ?? atMs,
          ...readAtMs,
          unread: true,
        };
      } else if (prior === undefined || JSON.stringify(prior.value) !== JSON.stringify(value)) {
        objects[read.kind][read.name] = { value, sinceMs: atMs, readAtMs: askedMs };
      } else {
        objects[read.kind][read.name] = { value, sinceMs: prior.sinceMs, readAtMs: askedMs };
      }
    }
  };
  await Promise.all(Array.from({ length: READS_IN_FLIGHT }, worker));
}

/** Every page of the three lists, then `/stats`; undefined when any read got no answer. */
async function readListing(ctx: ProbeContext, ns: string): Promise<ListingEntry["listing"] | undefined> {
  const pages = async (path: string, field: string): Promise<unknown[] | undefined> => {
    const rows: unknown[] = [];
    let cursor: string | null = null;
    do {
      const query: Record<string, string> = { limit: String(LIST_LIMIT_MAX), ...(cursor === null ? {} : { cursor }) };
      const outcome = await perform(ctx.baseUrl(), { method: "GET", path, params: { ns }, query }, ctx.timeoutMs);
      if (outcome.type !== "ok") return undefined;
      const page = outcome.body as Record<string, unknown>;
      rows.push(...(page[field] as unknown[]));
      cursor = page["cursor"] as string | null;
    } while (cursor !== null);
    return rows;
  };
  const claims = await pages(listClaims.path, "claims");
  const generations = await pages(listGenerations.path, "generations");
  const scopes = await pages(listScopes.path, "scopes");
  const stats = await perform(
    ctx.baseUrl(),
    { method: "GET", path: namespaceStats.path, params: { ns } },
    ctx.timeoutMs,
  );
  if (claims === undefined || generations === undefined || scopes === undefined || stats.type !== "ok")
    return undefined;
  return { claims, generations, scopes, stats: stats.body };
}
