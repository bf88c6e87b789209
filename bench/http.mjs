/**
 * The benchmark's HTTP client: `undici.request` over one keep-alive dispatcher when undici
 * can be imported from node_modules, else `node:http` with a keep-alive Agent.
 *
 * Why not `fetch`: on these 2-core machines the load generator competes with the server for
 * CPU, and Node's bundled fetch costs about 5× the CPU of `undici.request` per request, which
 * would lower every figure. The client's name is printed with the results.
 *
 * Guarantees: every response body is read to the end (so connections are reused) and parsed
 * as JSON when non-empty; one dispatcher per client, with as many connections per origin as
 * there are requests in flight (a closed loop of N clients holds N); a request that gets no
 * answer rejects with an Error naming its method and URL (the library's error as `cause`).
 * It does not retry anything.
 */
import http from "node:http";

/**
 * @typedef {object} Reply
 * @property {number} status
 * @property {unknown} body parsed JSON, `{raw}` for a body that is not JSON, or undefined
 *   for an empty body
 */

/**
 * The fields of an expected reply that the benchmark reads. The shape is trusted, not
 * validated, once {@link expectStatus} has checked the status: each caller reads only the
 * field its route returns (docs/protocol.md), and a wrong guess fails the measurement with a TypeError.
 * @typedef {object} Body
 * @property {{ fencingToken: string, expiresAtMs: number }} claim claims routes
 * @property {{ leaseId: string, expiresAtMs: number }} lease coord lease grant
 * @property {string} generation coord snapshot and publish
 */

/**
 * @typedef {object} BenchClient
 * @property {string} name which client library made the requests
 * @property {(method: string, url: string, body?: unknown) => Promise<Reply>} call
 * @property {() => Promise<void>} close
 */

/**
 * @param {string} [token] bearer token sent on every request (none when undefined: the
 *   etcd gateway of bench/peers.mjs takes no shiftlock token)
 * @returns {Promise<BenchClient>}
 */
export async function makeClient(token) {
  /** @type {Record<string, string>} */
  const headers = token === undefined ? {} : { authorization: `Bearer ${token}` };
  const jsonHeaders = { ...headers, "content-type": "application/json" };
  // A non-JSON body (e.g. the dev server's "worker restarted" page) is kept as text so the
  // failure names it instead of failing on the parse.
  /**
   * @param {string} text
   * @returns {unknown}
   */
  const parse = (text) => {
    if (text === "") return undefined;
    try {
      return /** @type {unknown} */ (JSON.parse(text));
    } catch {
      return { raw: text.slice(0, 200) };
    }
  };
  try {
    const undici = await import("undici");
    const { createRequire } = await import("node:module");
    const pkg = /** @type {{ version: string }} */ (createRequire(import.meta.url)("undici/package.json"));
    const version = pkg.version;
    // workerd closes a connection idle for 5 s; a client that kept it longer would now and
    // then send on a connection being closed ("other side closed" after a 5-s pause).
    const dispatcher = new undici.Agent({ keepAliveTimeout: 4_000, keepAliveMaxTimeout: 4_000 });
    return {
      name: `undici ${version} request() (keep-alive)`,
      async call(method, url, body) {
        try {
          const res = await undici.request(url, {
            method,
            dispatcher,
            ...(body === undefined ? { headers } : { headers: jsonHeaders, body: JSON.stringify(body) }),
          });
          return { status: res.statusCode, body: parse(await res.body.text()) };
        } catch (err) {
          throw noAnswer(method, url, err);
        }
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
          req.on("error", (err) => reject(noAnswer(method, url, err)));
          req.on("response", (res) => {
            let text = "";
            res.setEncoding("utf8");
            res.on("data", (/** @type {string} */ chunk) => (text += chunk));
            res.on("end", () => resolve({ status: res.statusCode ?? 0, body: parse(text) }));
          });
          req.end(payload);
        });
      },
      close: () => Promise.resolve(agent.destroy()),
    };
  }
}

/**
 * The error of a request that got no answer: names the request, keeps the library's error.
 * @param {string} method
 * @param {string} url
 * @param {unknown} err
 */
function noAnswer(method, url, err) {
  const code = /** @type {{ code?: unknown }} */ (err)?.code;
  const why = err instanceof Error && err.message !== "" ? err.message : String(code ?? err);
  return new Error(`${method} ${url}: no answer (${why})`, { cause: err });
}

/**
 * Throw unless the reply has the expected status; the message carries the error code.
 * @param {Reply} reply
 * @param {number} status
 * @param {string} what names the request in the message
 * @returns {Body}
 */
export function expectStatus(reply, status, what) {
  if (reply.status !== status) {
    throw new Error(`${what}: expected ${status}, got ${reply.status} (${describeBody(reply.body)})`);
  }
  return /** @type {Body} */ (reply.body);
}

/**
 * The error code of an error envelope, the start of a non-JSON body, or the JSON itself.
 * @param {unknown} body
 */
function describeBody(body) {
  const b = /** @type {{ error?: { code?: unknown }, raw?: unknown } | undefined} */ (body);
  if (typeof b?.error?.code === "string") return b.error.code;
  if (typeof b?.raw === "string") return b.raw;
  return String(JSON.stringify(body)).slice(0, 200);
}
