/* eslint-disable @typescript-eslint/no-explicit-any, @typescript-eslint/no-unsafe-return, @typescript-eslint/no-unsafe-argument -- JSON bodies under test are inspected loosely. */
// Shared helpers for the claims worker tests: authenticated requests against the Worker
// entry (`exports.default.fetch`), unique names, and a WebSocket message collector.
import { exports } from "cloudflare:workers";

export const WRITE = "test-write-all";
export const READ = "test-read-all";

/** A fresh namespace/claim pair per test, so tests never share objects. */
export function unique(prefix = "c"): string {
  return `${prefix}-${crypto.randomUUID()}`;
}

export function claimUrl(ns: string, claim: string, suffix = ""): string {
  return `http://x/v1/ns/${encodeURIComponent(ns)}/claims/${encodeURIComponent(claim)}${suffix}`;
}

export async function call(
  method: string,
  url: string,
  body?: unknown,
  token: string | null = WRITE,
): Promise<{ status: number; body: any; headers: Headers }> {
  const headers: Record<string, string> = {};
  if (token !== null) headers["Authorization"] = `Bearer ${token}`;
  let payload: string | undefined;
  if (body !== undefined) {
    headers["Content-Type"] = "application/json";
    payload = typeof body === "string" ? body : JSON.stringify(body);
  }
  const res = await exports.default.fetch(url, {
    method,
    headers,
    ...(payload === undefined ? {} : { body: payload }),
  });
  const text = await res.text();
  return { status: res.status, body: text === "" ? undefined : JSON.parse(text), headers: res.headers };
}

export const post = (url: string, body?: unknown, token: string | null = WRITE) => call("POST", url, body, token);
export const get = (url: string, token: string | null = WRITE) => call("GET", url, undefined, token);

/** Open a watch socket through the router and collect its messages. */
export async function openWatch(
  ns: string,
  claim: string,
  query = "",
  token = READ,
): Promise<{
  ws: WebSocket;
  messages: any[];
  closed: Promise<{ code: number; reason: string }>;
  next: () => Promise<any>;
}> {
  const res = await exports.default.fetch(claimUrl(ns, claim, `/watch${query}`), {
    headers: { Upgrade: "websocket", Authorization: `Bearer ${token}` },
  });
  if (res.status !== 101 || res.webSocket === null) {
    throw new Error(`watch refused: ${res.status} ${await res.text()}`);
  }
  const ws = res.webSocket;
  const messages: any[] = [];
  const waiters: (() => void)[] = [];
  let read = 0;
  ws.accept();
  ws.addEventListener("message", (e) => {
    messages.push(JSON.parse(e.data as string));
    for (const w of waiters.splice(0)) w();
  });
  const closed = new Promise<{ code: number; reason: string }>((resolve) => {
    ws.addEventListener("close", (e) => {
      resolve({ code: e.code, reason: e.reason });
      for (const w of waiters.splice(0)) w();
    });
  });
  const next = async (): Promise<any> => {
    while (messages.length <= read) {
      await new Promise<void>((resolve) => waiters.push(resolve));
    }
    return messages[read++];
  };
  return { ws, messages, closed, next };
}
