/**
 * Shared pieces of the claims contract suite: the fixture type and assertion helpers.
 */
import { expect } from "vitest";
import type { ClaimsBackend, ClaimWatchItem } from "../../src/client/claims/claims-backend.ts";
import { ShiftlockError, type ErrorCode } from "../../src/protocol/errors.ts";

export interface ClaimsFixture {
  backend: ClaimsBackend;
  /** The same claims through a caller allowed to evict (the `admin` role over HTTP); may be `backend`. */
  operator: ClaimsBackend;
  /** Let `ms` of the backend's clock pass (a fake clock advances; a real one waits). */
  passTime: (ms: number) => Promise<void>;
  /** Seed a claim's token (only backends with a test hook; the overflow checks need it). */
  forceSetToken?: (claimName: string, token: bigint) => void;
}

export const MINUTE = 60_000;

/** The ShiftlockError a promise rejects with (fails the test if it resolves). */
export async function refusal(p: Promise<unknown>): Promise<ShiftlockError> {
  try {
    await p;
  } catch (err) {
    expect(err).toBeInstanceOf(ShiftlockError);
    return err as ShiftlockError;
  }
  throw new Error("expected a refusal, got success");
}

export async function expectCode(p: Promise<unknown>, code: ErrorCode): Promise<ShiftlockError> {
  const err = await refusal(p);
  expect(err.code).toBe(code);
  return err;
}

/** Next item of a watch, failing after `timeoutMs` instead of hanging the suite. */
export async function nextItem(it: AsyncIterator<ClaimWatchItem>, timeoutMs = 10_000): Promise<ClaimWatchItem> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no watch item within ${timeoutMs} ms`)), timeoutMs);
  });
  try {
    const r = await Promise.race([it.next(), timeout]);
    if (r.done === true) throw new Error("watch ended");
    return r.value;
  } finally {
    clearTimeout(timer);
  }
}

/** A test body that gets a fresh fixture and a unique claim name. */
export type FixtureTest = (f: ClaimsFixture, claim: string) => Promise<void>;

/** Wrap a body: fresh fixture, unique claim name, backend closed afterwards. */
export function fixtureRunner(makeFixture: () => Promise<ClaimsFixture>): (body: FixtureTest) => () => Promise<void> {
  return (body) => async () => {
    const f = await makeFixture();
    try {
      await body(f, `c-${crypto.randomUUID()}`);
    } finally {
      await f.backend.close();
      if (f.operator !== f.backend) await f.operator.close();
    }
  };
}
