/**
 * Configuration of a {@link GenerationSession}: defaults and validation at construction.
 *
 * Guarantees: a config that passes {@link resolveConfig} satisfies
 * `0 < renewIntervalMs < leaseTtlMs - safetyMarginMs` and `leaseTtlMs` within the protocol's
 * 100 ms … 24 h, so a session can always renew at least once before it would declare loss.
 * Invalid configs throw `invalid_request` naming the field (`details.field`).
 */
import type { Clock } from "../../core/clock.ts";
import { systemClock } from "../../core/clock.ts";
import { ShiftlockError } from "../../protocol/errors.ts";
import { TTL_MAX_MS, TTL_MIN_MS } from "../../protocol/fields.ts";
import { nameProblem } from "../../protocol/names.ts";
import type { ClaimsBackend } from "../claims/claims-backend.ts";
import { defaultRenewIntervalMs, defaultSafetyMarginMs } from "../lease-timing.ts";
import { defaultGenerationId } from "./ids.ts";

/** What a service passes to {@link GenerationSession.open}. Durations in milliseconds. */
export interface GenerationSessionConfig {
  /** Service name (1–256 bytes). Required. */
  service: string;
  /** This process/instance (1–256 bytes). Required. */
  instanceId: string;
  /** Where claims live (`HttpClaimsBackend` or `MemoryClaimsBackend`). Required. */
  backend: ClaimsBackend;
  /** Defaults to `<service>-<instanceId>-<nowMs>` (shortened with a hash to fit 256 bytes). */
  generationId?: string;
  /**
   * Bind claims to the session's lease (docs/protocol.md#sessions): default true. The session
   * keeps one lease epoch with one keepalive loop (over the lease channel where a WebSocket
   * can be opened), its claims are acquired, prepared and committed with `bound: true`, and
   * none is renewed on its own. `false`: every claim keeps a deadline of its own (`ttlMs`)
   * and its own renew loop, as before sessions existed.
   */
  bound?: boolean;
  /** Lease duration: of the session's lease (bound) or of every claim; default 15 000, within 100 … 86 400 000. */
  leaseTtlMs?: number;
  /** Keepalive (bound) or renew period; default `leaseTtlMs / 3`; must leave room before the loss margin. */
  renewIntervalMs?: number;
  /** Retry period of `waitForOwnership` while it has no live watch of the claim; default 500. */
  acquireIntervalMs?: number;
  /**
   * Retry period of `waitForOwnership` while its watch of the claim is live: the watch wakes
   * it on every change that can make the claim acquirable (released, expired, evicted,
   * committed to this generation), so the poll is only a safety net; default
   * `max(10 000, acquireIntervalMs)`, at least `acquireIntervalMs`.
   */
  watchedAcquireIntervalMs?: number;
  /** A prepared transfer not committed within this is aborted; default 30 000. */
  transferTimeoutMs?: number;
  /** How long a handoff waits for in-flight work; default 30 000. */
  drainTimeoutMs?: number;
  /**
   * The loss signal fires this long before the locally computed server deadline when no
   * renew (or keepalive of the session's lease) has succeeded; default `max(leaseTtlMs / 10, 50)` (src/client/lease-timing.ts). Covers clock-rate drift and
   * event-loop delay; it does not cover a paused process (see docs/handoff.md).
   */
  safetyMarginMs?: number;
  /** Default {@link systemClock}. */
  clock?: Clock;
}

export interface ResolvedConfig {
  readonly service: string;
  readonly instanceId: string;
  readonly backend: ClaimsBackend;
  readonly generationId: string;
  readonly bound: boolean;
  readonly leaseTtlMs: number;
  readonly renewIntervalMs: number;
  readonly acquireIntervalMs: number;
  readonly watchedAcquireIntervalMs: number;
  readonly transferTimeoutMs: number;
  readonly drainTimeoutMs: number;
  readonly safetyMarginMs: number;
  /** TTL of a transfer reservation: long enough to outlive the transfer timeout. */
  readonly reservationTtlMs: number;
  readonly clock: Clock;
}

function invalid(field: string, message: string): ShiftlockError {
  return new ShiftlockError("invalid_request", `${field}: ${message}`, { field });
}

function requireName(field: string, value: unknown): string {
  if (typeof value !== "string" || value === "") throw invalid(field, "is required");
  const problem = nameProblem(value);
  if (problem !== undefined) throw invalid(field, problem);
  return value;
}

function duration(field: string, value: number | undefined, fallback: number, min: number, max: number): number {
  const v = value ?? fallback;
  if (!Number.isInteger(v) || v < min || v > max) throw invalid(field, `must be an integer within ${min}..${max}`);
  return v;
}

/** Apply defaults and validate; throws `invalid_request` with `details.field`. */
export function resolveConfig(config: GenerationSessionConfig): ResolvedConfig {
  const service = requireName("service", config.service);
  const instanceId = requireName("instanceId", config.instanceId);
  if (config.backend === undefined || config.backend === null) throw invalid("backend", "is required");
  if (config.bound !== undefined && typeof config.bound !== "boolean") throw invalid("bound", "must be a boolean");
  const clock = config.clock ?? systemClock;
  const leaseTtlMs = duration("leaseTtlMs", config.leaseTtlMs, 15_000, TTL_MIN_MS, TTL_MAX_MS);
  const safetyMarginMs = duration(
    "safetyMarginMs",
    config.safetyMarginMs,
    defaultSafetyMarginMs(leaseTtlMs),
    0,
    leaseTtlMs - 1,
  );
  const renewIntervalMs = duration(
    "renewIntervalMs",
    config.renewIntervalMs,
    defaultRenewIntervalMs(leaseTtlMs),
    1,
    TTL_MAX_MS,
  );
  if (renewIntervalMs >= leaseTtlMs - safetyMarginMs) {
    throw invalid("renewIntervalMs", `must be below leaseTtlMs - safetyMarginMs (${leaseTtlMs - safetyMarginMs})`);
  }
  const acquireIntervalMs = duration("acquireIntervalMs", config.acquireIntervalMs, 500, 1, TTL_MAX_MS);
  const watchedAcquireIntervalMs = duration(
    "watchedAcquireIntervalMs",
    config.watchedAcquireIntervalMs,
    Math.max(10_000, acquireIntervalMs),
    acquireIntervalMs,
    TTL_MAX_MS,
  );
  const transferTimeoutMs = duration("transferTimeoutMs", config.transferTimeoutMs, 30_000, 1, TTL_MAX_MS);
  const drainTimeoutMs = duration("drainTimeoutMs", config.drainTimeoutMs, 30_000, 0, TTL_MAX_MS);
  const generationId = requireName(
    "generationId",
    config.generationId ?? defaultGenerationId(service, instanceId, clock.nowMs()),
  );
  // As the Go reference: a reservation outlives the transfer timeout by a renew period, so
  // the timeout watcher (not expiry) decides a stalled transfer.
  const reservationTtlMs = Math.min(
    TTL_MAX_MS,
    transferTimeoutMs > leaseTtlMs ? transferTimeoutMs + Math.floor(leaseTtlMs / 3) : leaseTtlMs,
  );
  return {
    service,
    instanceId,
    backend: config.backend,
    generationId,
    bound: config.bound ?? true,
    leaseTtlMs,
    renewIntervalMs,
    acquireIntervalMs,
    watchedAcquireIntervalMs,
    transferTimeoutMs,
    drainTimeoutMs,
    safetyMarginMs,
    reservationTtlMs,
    clock,
  };
}
