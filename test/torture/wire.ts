/**
 * One HTTP call of the torture clients, classified into a history outcome.
 *
 * Guarantees:
 * - Paths come from the route declarations (src/protocol/*-routes.ts), never retyped.
 * - 2xx → `ok`; a 4xx envelope → `error` with its code (the server answered: the refusal is
 *   certain); 5xx, a timeout or a broken connection → `unknown`; connection refused →
 *   `error` `unavailable` (nothing reached a server).
 *
 * Does not: retry (the workload decides, with the same operationId).
 */
import { fillPath } from "../../src/protocol/route.ts";
import type { Outcome } from "./history.ts";

export const TOKEN = "dev-token";

export interface Call {
  method: "GET" | "POST" | "PATCH" | "DELETE";
  /** Route path template and its parameters. */
  path: string;
  params: Record<string, string>;
  /** Query parameters (the listing's `limit` and `cursor`). */
  query?: Record<string, string>;
  body?: unknown;
}

/** Perform `call` against `baseUrl`, giving up (outcome unknown) after `timeoutMs`. */
export async function perform(baseUrl: string, call: Call, timeoutMs: number): Promise<Outcome> {
  const query = call.query === undefined ? "" : `?${new URLSearchParams(call.query).toString()}`;
  const url = baseUrl + fillPath(call.path, call.params) + query;
  let res: Response;
  let text: string;
  try {
    res = await fetch(url, {
      method: call.method,
      headers: {
        authorization: `Bearer ${TOKEN}`,
        ...(call.body === undefined ? {} : { "content-type": "application/json" }),
      },
      ...(call.body === undefined ? {} : { body: JSON.stringify(call.body) }),
      signal: AbortSignal.timeout(timeoutMs),
    });
    text = await res.text();
  } catch (err) {
    if (refused(err)) return { type: "error", status: 0, code: "unavailable", body: null };
    return { type: "unknown", reason: describe(err) };
  }
  let body: unknown = null;
  try {
    body = text === "" ? null : JSON.parse(text);
  } catch {
    return { type: "unknown", reason: `status ${res.status}, not JSON` };
  }
  if (res.status >= 200 && res.status < 300) return { type: "ok", status: res.status, body };
  const code = errorCode(body);
  if (res.status >= 500) return { type: "unknown", reason: `status ${res.status} ${code}` };
  return { type: "error", status: res.status, code, body };
}

function errorCode(body: unknown): string {
  if (typeof body === "object" && body !== null && "error" in body) {
    const error = body.error;
    if (typeof error === "object" && error !== null && "code" in error) return String(error.code);
  }
  return "?";
}

function refused(err: unknown): boolean {
  for (let e: unknown = err; typeof e === "object" && e !== null; e = (e as { cause?: unknown }).cause) {
    if ((e as { code?: unknown }).code === "ECONNREFUSED") return true;
    if (!("cause" in e)) break;
  }
  return false;
}

function describe(err: unknown): string {
  if (err instanceof Error) {
    const cause = (err as { cause?: unknown }).cause;
    const detail = cause instanceof Error ? `: ${(cause as { code?: string }).code ?? cause.message}` : "";
    return `${err.name}${detail}`;
  }
  return String(err);
}
