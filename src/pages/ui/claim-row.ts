/**
 * One claim on the dashboard: its table row, kept true from the claim's own object.
 *
 * Guarantees:
 * - What the row shows (owner, token, phase, deadline) comes from the object: a `GET` when
 *   the row opens, then its watch (the client's `watchClaim`: reconnect, resume, ack), and a
 *   `GET` whenever the deadline shown has passed (renewals send no event; expiry.ts). A
 *   bound claim's deadline is its owner generation's lease, read with `GET
 *   …/generations/{id}` along with the claim (keepalives send no event either). The
 *   listing row that created it only names the claim: the index may trail the object
 *   (docs/listing.md), so its expiry is never shown. Of two records the one with the higher
 *   version wins, whatever order they arrived in.
 * - The timeline opens with the claim's retained history (the watch replays from
 *   `afterVersion` 0), and holds each version once: paging or filtering away and back never repeats an event.
 * - A watch or read refused for the token (`unauthorized`, `forbidden`) is reported through
 *   `onRefused`, once.
 *
 * Does not: act on the claim (its Evict button, for an admin, opens evict.ts's confirmation), or poll: it asks the object only when
 * a deadline it shows has passed, at most once a second.
 */
import type { HttpClaimsBackend } from "../../client/claims/http-claims-backend.ts";
import type { ClaimRecord } from "../../protocol/claims.ts";
import { hasCode } from "../../protocol/errors.ts";
import { el } from "../dom.ts";
import { evictButton, type EvictTarget } from "./evict.ts";
import { expiryView, type LeaseSeen } from "./expiry.ts";

/** Events kept per claim timeline (the server retains more; the page shows the latest). */
export const TIMELINE_MAX = 50;
/** At most one read of an overdue claim per this long. */
const CHECK_EVERY_MS = 1000;

export interface TimelineEntry {
  version: bigint;
  timeMs: number;
  reason: string;
  token: bigint;
  owner: string;
  successor: string;
}

/** A claim's timeline, by version: shared by every row of that claim this page shows. */
export type Timeline = Map<bigint, TimelineEntry>;

export interface ClaimRowContext {
  claims: HttpClaimsBackend;
  nowMs: () => number;
  /** The token was refused (the page returns to its token form with `reason`). */
  onRefused: (reason: string) => void;
  /** The row's record or timeline changed (the open timeline panel re-renders). */
  onChange: (row: ClaimRow) => void;
  /** The token is an admin's (whoami): held claims get an Evict button. */
  admin: () => boolean;
  /** Ask the operator to confirm an eviction (evict.ts). */
  confirmEvict: (target: EvictTarget) => void;
}

export class ClaimRow {
  readonly tr: HTMLTableRowElement;
  /** The object's record (null until the object answered; never the listing's). */
  record: ClaimRecord | null = null;
  private listed: ClaimRecord;
  private readonly abort = new AbortController();
  private lastCheckMs = -Infinity;
  private checking = false;
  /** A bound claim's owner lease, as its generation last answered. */
  private lease: (LeaseSeen & { generation: string }) | undefined;

  constructor(
    listed: ClaimRecord,
    readonly timeline: Timeline,
    private readonly ctx: ClaimRowContext,
    select: (row: ClaimRow) => void,
  ) {
    this.listed = listed;
    const button = el("button", {
      type: "button",
      class: "link",
      text: listed.name,
      "aria-label": `Timeline of ${listed.name}`,
    });
    button.addEventListener("click", () => select(this));
    this.tr = el("tr", { "data-name": listed.name }, [
      el("th", { scope: "row" }, [button]),
      el("td"),
      el("td"),
      el("td"),
      el("td", { class: "expiry" }),
      el("td"),
      el("td"),
      el("td", { class: "actions" }),
    ]) as HTMLTableRowElement;
    this.render();
  }

  get name(): string {
    return this.listed.name;
  }

  /** Start following the object: read it, then watch it from the history this page lacks. */
  open(): void {
    void this.check();
    // From the start of the retained history, also when this page holds part of it: a
    // watch with nothing to replay would say nothing until its first pong (30 s).
    const watch = this.ctx.claims.watchClaim(this.name, { afterVersion: 0n, signal: this.abort.signal });
    watch.established.then(
      () => this.tr.setAttribute("data-watching", "true"),
      () => undefined,
    );
    void (async () => {
      try {
        for await (const item of watch) {
          if (item.type === "event") {
            this.timeline.set(item.claim.version, {
              version: item.claim.version,
              timeMs: item.timeMs,
              reason: item.reason,
              token: item.claim.fencingToken,
              owner: item.claim.ownerGeneration,
              successor: item.claim.pendingSuccessor,
            });
            trim(this.timeline);
          }
          this.take(item.claim);
        }
      } catch (err) {
        this.failed(err);
      } finally {
        this.tr.removeAttribute("data-watching");
      }
    })();
  }

  close(): void {
    this.abort.abort();
  }

  /** Re-render the deadline, and ask the object when the one shown has passed. */
  tick(): void {
    // Another owner's lease says nothing of this one's.
    const lease = this.lease?.generation === this.record?.ownerGeneration ? this.lease : undefined;
    const view = expiryView(this.record, this.ctx.nowMs(), lease);
    if (lease !== undefined) this.tr.setAttribute("data-lease-expires", String(lease.expiresAtMs));
    this.tr.querySelector(".expiry")!.textContent = this.record === null ? "…" : view.text;
    if (view.due && this.ctx.nowMs() - this.lastCheckMs >= CHECK_EVERY_MS) void this.check();
  }

  /** Read the object's current record (its deadline moves with every renewal). */
  private async check(): Promise<void> {
    if (this.checking) return;
    this.checking = true;
    this.lastCheckMs = this.ctx.nowMs();
    try {
      this.take(await this.ctx.claims.getClaim(this.name, { signal: this.abort.signal }));
      const bound = this.record?.bound === true && this.record.phase !== "unowned" ? this.record : undefined;
      if (bound !== undefined) {
        const g = await this.ctx.claims.getGeneration(bound.ownerGeneration, { signal: this.abort.signal });
        this.lease = { generation: g.id, epoch: g.leaseEpoch, expiresAtMs: g.leaseExpiresAtMs };
        this.render();
      }
    } catch (err) {
      if (!hasCode(err, "claim_not_found")) this.failed(err);
    } finally {
      this.checking = false;
    }
  }

  /** Keep the newer of the record held and `claim`. */
  private take(claim: ClaimRecord | null): void {
    if (claim !== null && (this.record === null || claim.version > this.record.version)) this.record = claim;
    this.render();
    this.ctx.onChange(this);
  }

  private failed(err: unknown): void {
    if (this.abort.signal.aborted) return;
    if (hasCode(err, "unauthorized") || hasCode(err, "forbidden")) {
      this.ctx.onRefused(err instanceof Error ? err.message : String(err));
    } else {
      this.tr.setAttribute("data-error", err instanceof Error ? err.message : String(err));
    }
  }

  /** Show the record held (and the Evict button, for an admin and a held claim). */
  render(): void {
    const r = this.record ?? this.listed;
    const cells = this.tr.children;
    cells[1]!.textContent = r.ownerGeneration || "—";
    cells[2]!.textContent = r.fencingToken.toString();
    cells[3]!.textContent = r.pendingSuccessor ? `${r.phase} → ${r.pendingSuccessor}` : r.phase;
    cells[5]!.textContent = r.reason;
    cells[6]!.textContent = r.version.toString();
    this.tr.setAttribute("data-phase", r.phase);
    this.tr.setAttribute("data-owner", r.ownerGeneration);
    this.tr.setAttribute("data-token", r.fencingToken.toString());
    this.tr.setAttribute("data-version", r.version.toString());
    this.tr.setAttribute("data-successor", r.pendingSuccessor);
    if (this.record !== null) this.tr.setAttribute("data-expires", String(this.record.expiresAtMs));
    const actions = cells[7]!;
    actions.textContent = "";
    if (this.ctx.admin() && this.record !== null && this.record.phase !== "unowned") {
      const target = { kind: "claim", name: this.name, owner: r.ownerGeneration, token: r.fencingToken } as const;
      actions.append(evictButton(target, this.ctx.confirmEvict));
    }
    this.tick();
  }
}

/** Keep the latest {@link TIMELINE_MAX} versions. */
function trim(timeline: Timeline): void {
  if (timeline.size <= TIMELINE_MAX) return;
  const oldest = [...timeline.keys()].sort((a, b) => (a < b ? -1 : 1)).slice(0, timeline.size - TIMELINE_MAX);
  for (const version of oldest) timeline.delete(version);
}

/** The timeline's entries, newest first. */
export function newestFirst(timeline: Timeline): TimelineEntry[] {
  return [...timeline.values()].sort((a, b) => (a.version > b.version ? -1 : 1));
}
