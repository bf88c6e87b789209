/**
 * Eviction from the dashboard (docs/protocol.md#eviction): offered only when the token's
 * `whoami` says `admin`, and only behind a confirmation that names what ends and whose hold.
 *
 * Guarantees: nothing is sent until the operator confirms in the dialog; Cancel (or Escape)
 * sends nothing. The request is the client's (`HttpClaimsBackend.evictClaim`,
 * `HttpCoordinator.evict`), with the operator's note when one was typed. A refusal is shown in the dialog,
 * which stays open. Does not: change the rows itself — a claim's row learns of the eviction
 * from its watch (the `evicted` event); scope rows are read again by the caller.
 */
import type { HttpClaimsBackend } from "../../client/claims/http-claims-backend.ts";
import type { HttpCoordinator } from "../../client/coord/coord-http.ts";
import type { ScopeSummary } from "../../protocol/listing.ts";
import { byId, el } from "../dom.ts";

/** What an Evict button ends. */
export type EvictTarget =
  { kind: "claim"; name: string; owner: string; token: bigint } | { kind: "scope"; scope: ScopeSummary };

/** The scope's address as the dashboard writes it: `volume/store/key` without empty parts. */
export function scopeLabel(s: Pick<ScopeSummary, "volumeId" | "objectStoreId" | "key">): string {
  return [s.volumeId, s.objectStoreId, s.key].filter((part) => part !== "").join("/");
}

function describe(target: EvictTarget): string {
  if (target.kind === "claim") {
    return (
      `Claim ${target.name} becomes unowned; ${target.owner || "its owner"} loses it, and its ` +
      `token ${target.token} is refused (409 evicted) from now on.`
    );
  }
  const holder = target.scope.holder || "its holder";
  return `The write lease of ${scopeLabel(target.scope)} ends; ${holder}'s next keepalive or publish fails (410 lease_lost).`;
}

/** The Evict button of one row: opens the confirmation for `target`. */
export function evictButton(target: EvictTarget, confirm: (target: EvictTarget) => void): HTMLElement {
  const what = target.kind === "claim" ? target.name : scopeLabel(target.scope);
  const button = el("button", { type: "button", class: "evict", text: "Evict", "aria-label": `Evict ${what}` });
  button.addEventListener("click", () => confirm(target));
  return button;
}

/** The clients an eviction goes through (the open namespace's). */
export interface Evictors {
  claims: HttpClaimsBackend;
  coord: HttpCoordinator;
}

/** The one confirmation dialog of the page, sending through `clients`; `done` runs after an eviction. */
export function evictDialog(clients: () => Evictors | undefined, done: (target: EvictTarget) => void) {
  const dialog = byId<HTMLDialogElement>("evict-dialog");
  const noteInput = byId<HTMLInputElement>("evict-note");
  const error = byId("evict-error");
  let pending: EvictTarget | undefined;

  byId("evict-cancel").addEventListener("click", () => dialog.close());
  dialog.addEventListener("close", () => (pending = undefined));
  byId("evict-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const target = pending;
    const via = clients();
    if (target === undefined || via === undefined) return;
    const note = noteInput.value === "" ? undefined : noteInput.value;
    const sent: Promise<unknown> =
      target.kind === "claim"
        ? via.claims.evictClaim({ claimName: target.name, ...(note === undefined ? {} : { note }) })
        : via.coord.evict({ ...target.scope, participantId: "" }, { note });
    sent.then(
      () => {
        dialog.close();
        done(target);
      },
      (err: unknown) => {
        error.textContent = `Not evicted: ${err instanceof Error ? err.message : String(err)}`;
        error.hidden = false;
      },
    );
  });

  return (target: EvictTarget): void => {
    pending = target;
    byId("evict-title").textContent =
      target.kind === "claim" ? `Evict ${target.name}?` : `Evict ${scopeLabel(target.scope)}?`;
    byId("evict-what").textContent = describe(target);
    noteInput.value = "";
    error.hidden = true;
    dialog.showModal();
  };
}
