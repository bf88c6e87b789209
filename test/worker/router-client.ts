/* eslint-disable @typescript-eslint/no-explicit-any -- watch messages are inspected loosely. */
// Requests and watch sockets through the Worker entry (`exports.default.fetch`), shared by
// the claims and coord worker tests.
import { exports } from "cloudflare:workers";

/** One request through the router; `token` null sends no Authorization header. */
export async function routerCall(
  method: string,
  url: string,
  body: unknown,
  token: string | null,
  signal?: AbortSignal,
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
    ...(signal === undefined ? {} : { signal }),
  });
  const text = await res.text();
  return { status: res.status, body: text === "" ? undefined : JSON.parse(text), headers: res.headers };
}

export interface Watch {
  ws: WebSocket;
  /** Every message received so far, parsed. */
  messages: any[];
  closed: Promise<{ code: number; reason: string }>;
  /** The next unread message (waits for it). */
  next: () => Promise<any>;
  /** Wait until `predicate(messages)` holds (re-checked on every message or close). */
  until: (predicate: (messages: any[]) => boolean) => Promise<void>;
  response: Response;
}

/** Upgrade `url` with a bearer token and collect the socket's messages. */
export async function openWatchSocket(url: string, token: string): Promise<Watch> {
  const res = await exports.default.fetch(url, {
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
  let isClosed = false;
  void closed.then(() => (isClosed = true));
  const until = async (predicate: (messages: any[]) => boolean): Promise<void> => {
    while (!predicate(messages)) {
      if (isClosed) throw new Error(`socket closed while waiting; got ${messages.length} messages`);
      await new Promise<void>((resolve) => waiters.push(resolve));
    }
  };
  const next = async (): Promise<any> => {
    await until((m) => m.length > read);
    return messages[read++];
  };
  return { ws, messages, closed, next, until, response: res };
}
