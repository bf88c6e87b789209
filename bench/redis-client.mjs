/**
 * A tiny Redis client for the benchmark: RESP2 over one `node:net` connection, commands
 * answered in order (Redis answers a connection's commands in the order it sent them).
 *
 * Guarantees: one socket per client, Nagle off; replies are parsed incrementally (a reply
 * split across packets, or several in one, is fine); an error reply (`-ERR …`) rejects that
 * command only; a closed or failed socket rejects every command still waiting.
 * Does not: reconnect, pipeline on purpose (a closed loop awaits each reply), speak RESP3,
 * authenticate, or select a database — it talks to the private loopback Redis that
 * bench/peers.mjs starts, nothing else.
 */
import { connect } from "node:net";

/** @typedef {string | number | null | Array<string | number | null | unknown[]>} RespValue a reply (arrays are one level deep here) */

export class RespError extends Error {
  /** @override */
  name = "RespError";
}

/**
 * Parse one RESP value from `buf` at `at`.
 * @param {Buffer} buf
 * @param {number} at
 * @returns {{ value: RespValue | RespError, next: number } | undefined} undefined when incomplete
 */
export function parseReply(buf, at) {
  const eol = buf.indexOf("\r\n", at);
  if (eol < 0) return undefined;
  const type = String.fromCharCode(buf[at] ?? 0);
  const line = buf.toString("utf8", at + 1, eol);
  const next = eol + 2;
  switch (type) {
    case "+":
      return { value: line, next };
    case "-":
      return { value: new RespError(line), next };
    case ":":
      return { value: Number(line), next };
    case "$": {
      const length = Number(line);
      if (length < 0) return { value: null, next };
      if (buf.length < next + length + 2) return undefined;
      return { value: buf.toString("utf8", next, next + length), next: next + length + 2 };
    }
    case "*": {
      const count = Number(line);
      if (count < 0) return { value: null, next };
      /** @type {(string | number | null | unknown[])[]} */
      const items = [];
      let pos = next;
      for (let i = 0; i < count; i++) {
        const item = parseReply(buf, pos);
        if (item === undefined) return undefined;
        if (item.value instanceof RespError) return { value: item.value, next: item.next };
        items.push(item.value);
        pos = item.next;
      }
      return { value: items, next: pos };
    }
    default:
      throw new RespError(`unexpected RESP type ${JSON.stringify(type)}`);
  }
}

/** @param {readonly string[]} args */
function encode(args) {
  let out = `*${args.length}\r\n`;
  for (const a of args) out += `$${Buffer.byteLength(a)}\r\n${a}\r\n`;
  return out;
}

export class RedisClient {
  /**
   * @param {number} port on 127.0.0.1
   * @returns {Promise<RedisClient>}
   */
  static connect(port) {
    return new Promise((resolve, reject) => {
      const socket = connect({ host: "127.0.0.1", port, noDelay: true });
      socket.once("connect", () => {
        socket.off("error", reject);
        resolve(new RedisClient(socket));
      });
      socket.once("error", reject);
    });
  }

  /** @param {import("node:net").Socket} socket */
  constructor(socket) {
    this.socket = socket;
    /** @type {{ resolve: (v: RespValue) => void, reject: (e: Error) => void }[]} */
    this.waiting = [];
    /** @type {Buffer} */
    this.buffer = Buffer.alloc(0);
    socket.on("data", (chunk) => this.receive(chunk));
    const fail = (/** @type {Error} */ err) => {
      for (const w of this.waiting.splice(0)) w.reject(err);
    };
    socket.on("error", fail);
    socket.on("close", () => fail(new RespError("connection closed")));
  }

  /** @param {Buffer} chunk */
  receive(chunk) {
    this.buffer = this.buffer.length === 0 ? chunk : Buffer.concat([this.buffer, chunk]);
    let at = 0;
    for (;;) {
      const reply = parseReply(this.buffer, at);
      if (reply === undefined) break;
      at = reply.next;
      const waiter = this.waiting.shift();
      if (reply.value instanceof RespError) waiter?.reject(reply.value);
      else waiter?.resolve(reply.value);
    }
    this.buffer = this.buffer.subarray(at);
  }

  /**
   * Send one command and resolve with its reply.
   * @param {...string} args e.g. `"SET", "k", "v", "NX"`
   * @returns {Promise<RespValue>}
   */
  command(...args) {
    return new Promise((resolve, reject) => {
      this.waiting.push({ resolve, reject });
      this.socket.write(encode(args));
    });
  }

  close() {
    this.socket.end();
  }
}
