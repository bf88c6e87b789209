/**
 * The benchmark's HTTP client: `undici.request` over one keep-alive dispatcher when undici
 * can be imported from node_modules, else `node:http` with a keep-alive Agent.
 *
 * Why not `fetch`: on these 2-core machines the load generator competes with the server for
 * CPU, and Node's bundled fetch costs about 5× the CPU of `undici.request` per request, which
 * would lower every figure. The client's name is printed with the results.
 *
 * Guarantees: every response body is read to the end (so connections are reused) and parsed
 * as JSON when non-empty. It does not retry anything.
 */
import http from "node:http";

/**
 * @typedef {object} Reply
 * @property {number} status
 * @property {any} body parsed JSON, or undefined for an empty body
 */

/**
 * @typedef {object} BenchClient
 * @property {string} name which client library made the requests
 * @property {(method: string, url: string, body?: unknown) => Promise<Reply>} call
 * @property {() => Promise<void>} close
 */

/**
 * @param {string} token bearer token sent on every request
 * @returns {Promise<BenchClient>}
 */
export async function makeClient(token) {
  const headers = { authorization: `Bearer ${token}` };
  const jsonHeaders = { ...headers, "content-type": "application/json" };
  // A non-JSON body (e.g. the dev server's "worker restarted" page) is kept as text so the
  // failure names it instead of failing on the parse.
  const parse = (text) => {
    if (text === "") return undefined;
    try {
      return JSON.parse(text);
    } catch {
      return { raw: text.slice(0, 200) };
    }
  };
  try {
    const undici = await import("undici");
    const { createRequire } = await import("node:module");
    const version = createRequire(import.meta.url)("undici/package.json").version;
    const dispatcher = new undici.Agent({ keepAliveTimeout: 60_000, keepAliveMaxTimeout: 600_000 });
    return {
      name: `undici ${version} request() (keep-alive)`,
      async call(method, url, body) {
        const res = await undici.request(url, {
          method,
          dispatcher,
          headers: body === undefined ? headers : jsonHeaders,
          body: body === undefined ? undefined : JSON.stringify(body),
        });
        return { status: res.statusCode, body: parse(await res.body.text()) };
      },
      close: () => dispatcher.close(),
    };
  } catch {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });
    return {
      name: `node:http ${process.version} (keep-alive Agent)`,
      call(method, url, body) {
        return new Promise((resolve, reject) => {
          const payload = body === undefined ? undefined : JSON.stringify(body);
          const req = http.request(url, { method, agent, headers: payload === undefined ? headers : jsonHeaders });
          req.on("error", reject);
          req.on("response", (res) => {
            let text = "";
            res.setEncoding("utf8");
            res.on("data", (chunk) => (text += chunk));
            res.on("end", () => {
              try {
                resolve({ status: res.statusCode ?? 0, body: parse(text) });
              } catch (err) {
                reject(err);
              }
            });
          });
          req.end(payload);
        });
      },
      close: async () => agent.destroy(),
    };
  }
}

/**
 * Throw unless the reply has the expected status; the message carries the error code.
 * @param {Reply} reply
 * @param {number} status
 * @param {string} what
 */
export function expectStatus(reply, status, what) {
  if (reply.status !== status) {
    const code = reply.body?.error?.code ?? reply.body?.raw ?? JSON.stringify(reply.body)?.slice(0, 200);
    throw new Error(`${what}: expected ${status}, got ${reply.status} (${code})`);
  }
  return reply.body;
}
