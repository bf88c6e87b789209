/**
 * One acquire→release lock cycle on each system bench/peers.mjs compares, written the way
 * each system's users take a lock, and a closed-loop measurement of it.
 *
 * - etcd, as `concurrency.Mutex` with a session per lock, over the v3 JSON gateway:
 *   `POST /v3/lease/grant` (TTL 15 s) → `POST /v3/kv/txn` (put the key with the lease if its
 *   `create_revision` is 0) → `POST /v3/kv/deleterange` → `POST /v3/lease/revoke`; and with
 *   one session per client reused across locks (the fair form: lock = 1 txn, unlock = 1
 *   deleterange; the session's lease is granted when the measurement opens and revoked at
 *   its end, kept alive by nothing since a measurement is shorter than its TTL of 60 s).
 * - Redis: `SET key token NX PX 15000` → compare-and-delete (`EVAL` of the usual Lua: delete
 *   only if the value is still our token), over RESP (bench/redis-client.mjs).
 * - shiftlock claims: `POST …/claims/{c}/acquire` → `POST …/release` (the fencing token).
 * - shiftlock coord: `POST …/volumes/v/keys/{k}/leases` → `DELETE …/leases/{id}` (keyed
 *   scope: mutual exclusion only).
 * - the floor (bench/floor/worker.js): `POST /locks/{k}/acquire` → `POST /locks/{k}/release`,
 *   one SQLite Durable Object per lock, as a Workers user would write it.
 *
 * Contention (many clients, one key): etcd, Redis and claims retry at once when they lose
 * (txn not succeeded, SET answered nil, 409 `claim_held`) — none of them queues; coord asks
 * with `waitMs: 10000` and waits in the scope's FIFO queue instead.
 *
 * Guarantees: every reply's status or value is checked (a wrong one fails the measurement);
 * a lock taken is always released, also when the loop's time is up; a retry loop stops at
 * the loop's deadline (that cycle is not counted); each client uses its own connection
 * (HTTP keep-alive or its own Redis socket). Acquire attempts are counted so contention is
 * visible. Does not model etcd's queued `Mutex` waiters (watching the previous key) — it
 * models the simpler retry the comparison asks for — or Redlock across several Redis nodes.
 */
import { expectStatus } from "./http.mjs";
import { RedisClient } from "./redis-client.mjs";
import { closedLoop, round } from "./stats.mjs";

const TTL_MS = 15_000;
const WAIT_MS = 10_000;
const WARMUP = { durationMs: 1_500, maxCycles: 200 };

/**
 * @typedef {object} LockSession per measurement: one per client where the system needs it
 * @property {(client: number, key: string, deadline: number) => Promise<number | undefined>} cycle
 *   acquire (retrying or waiting as the system does) then release; resolves with the
 *   number of acquire attempts, or undefined when it gave up at `deadline`
 * @property {() => Promise<void>} close
 */

/**
 * @typedef {object} LockSystem
 * @property {string} name e.g. `etcd 3.4.23`
 * @property {string} how one line: the requests of one uncontended cycle
 * @property {number} requestsPerCycle uncontended
 * @property {(clients: number) => Promise<LockSession>} open
 */

/** @param {string} s */
const b64 = (s) => Buffer.from(s).toString("base64");
/** @param {string} s */
const enc = (s) => encodeURIComponent(s);

/**
 * @param {import("./http.mjs").BenchClient} http a client without shiftlock's token
 * @param {string} url etcd client URL
 * @param {string} version
 * @returns {LockSystem}
 */
export function etcdLocks(http, url, version, reuseSession = false) {
  /**
   * @param {string} path
   * @param {unknown} body
   */
  const post = async (path, body) => {
    const reply = await http.call("POST", `${url}${path}`, body);
    return /** @type {Record<string, unknown>} */ (expectStatus(reply, 200, `etcd ${path}`));
  };
  const grantLease = async (/** @type {number} */ ttlS) => {
    const lease = (await post("/v3/lease/grant", { TTL: ttlS }))["ID"];
    if (typeof lease !== "string") throw new Error("etcd lease grant: no ID");
    return lease;
  };
  /**
   * Take the key with `lease` (retrying at once when held), then delete it.
   * @param {number} client @param {string} key @param {string} lease @param {number} deadline
   * @returns {Promise<number | undefined>} attempts, or undefined when it gave up
   */
  const lockUnlock = async (client, key, lease, deadline) => {
    const k = b64(key);
    const put = {
      compare: [{ target: "CREATE", key: k, create_revision: "0", result: "EQUAL" }],
      success: [{ request_put: { key: k, value: b64(`client-${client}`), lease } }],
    };
    let attempts = 0;
    for (;;) {
      attempts++;
      const txn = await post("/v3/kv/txn", put);
      if (txn["succeeded"] === true) break;
      if (performance.now() > deadline) return undefined;
    }
    await post("/v3/kv/deleterange", { key: k });
    return attempts;
  };
  if (reuseSession) {
    return {
      name: `etcd ${version} (session reused)`,
      how: "txn put-if-create_revision=0 with the client's session lease → deleterange (lease granted once per client)",
      requestsPerCycle: 2,
      async open(clients) {
        const leases = await Promise.all(Array.from({ length: clients }, () => grantLease(60)));
        return {
          cycle: (client, key, deadline) => lockUnlock(client, key, /** @type {string} */ (leases[client]), deadline),
          close: async () => {
            await Promise.all(leases.map((ID) => post("/v3/lease/revoke", { ID })));
          },
        };
      },
    };
  }
  return {
    name: `etcd ${version}`,
    how: "lease grant → txn put-if-create_revision=0 with the lease → deleterange → lease revoke (v3 JSON gateway)",
    requestsPerCycle: 4,
    open: () =>
      Promise.resolve({
        async cycle(client, key, deadline) {
          const lease = await grantLease(TTL_MS / 1000);
          const attempts = await lockUnlock(client, key, lease, deadline);
          await post("/v3/lease/revoke", { ID: lease });
          return attempts;
        },
        close: () => Promise.resolve(),
      }),
  };
}

const COMPARE_AND_DELETE = `if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end`;

/**
 * @param {number} port
 * @param {string} version
 * @returns {LockSystem}
 */
export function redisLocks(port, version) {
  return {
    name: `Redis ${version}`,
    how: "SET key token NX PX 15000 → EVAL compare-and-delete (Lua)",
    requestsPerCycle: 2,
    async open(clients) {
      const conns = await Promise.all(Array.from({ length: clients }, () => RedisClient.connect(port)));
      let n = 0;
      return {
        async cycle(client, key, deadline) {
          const conn = /** @type {RedisClient} */ (conns[client]);
          const token = `${client}-${n++}`;
          let attempts = 0;
          for (;;) {
            attempts++;
            const set = await conn.command("SET", key, token, "NX", "PX", String(TTL_MS));
            if (set === "OK") break;
            if (set !== null) throw new Error(`redis SET: unexpected ${JSON.stringify(set)}`);
            if (performance.now() > deadline) return undefined;
          }
          const deleted = await conn.command("EVAL", COMPARE_AND_DELETE, "1", key, token);
          if (deleted !== 1) throw new Error(`redis release: expected 1, got ${JSON.stringify(deleted)}`);
          return attempts;
        },
        close: () => Promise.resolve(conns.forEach((c) => c.close())),
      };
    },
  };
}

/**
 * @param {import("./http.mjs").BenchClient} http with shiftlock's token
 * @param {string} url
 * @param {string} ns
 * @returns {LockSystem}
 */
export function claimLocks(http, url, ns) {
  return {
    name: "shiftlock claims",
    how: "POST …/claims/{c}/acquire → POST …/release",
    requestsPerCycle: 2,
    open: () =>
      Promise.resolve({
        async cycle(client, key, deadline) {
          const base = `${url}/v1/ns/${enc(ns)}/claims/${enc(key)}`;
          const generationId = `gen-${client}`;
          let attempts = 0;
          /** @type {string} */
          let token;
          for (;;) {
            attempts++;
            const reply = await http.call("POST", `${base}/acquire`, { generationId, ttlMs: TTL_MS });
            if (reply.status === 200) {
              token = expectStatus(reply, 200, "acquire").claim.fencingToken;
              break;
            }
            if (reply.status !== 409) expectStatus(reply, 200, "acquire");
            if (performance.now() > deadline) return undefined;
          }
          expectStatus(await http.call("POST", `${base}/release`, { generationId, token }), 200, "release");
          return attempts;
        },
        close: () => Promise.resolve(),
      }),
  };
}

/**
 * @param {import("./http.mjs").BenchClient} http with shiftlock's token
 * @param {string} url
 * @param {string} ns
 * @param {boolean} wait queue with `waitMs` (the contended case) instead of trying once
 * @returns {LockSystem}
 */
export function coordLocks(http, url, ns, wait) {
  return {
    name: "shiftlock coord",
    how: `POST …/volumes/v/keys/{k}/leases${wait ? " (waitMs 10000: FIFO queue)" : ""} → DELETE …/leases/{id}`,
    requestsPerCycle: 2,
    open: () =>
      Promise.resolve({
        async cycle(client, key, deadline) {
          const scope = `${url}/v1/ns/${enc(ns)}/volumes/bench/keys/${enc(key)}`;
          const body = { participantId: `p-${client}`, ttlMs: TTL_MS, ...(wait ? { waitMs: WAIT_MS } : {}) };
          let attempts = 0;
          /** @type {string} */
          let leaseId;
          for (;;) {
            attempts++;
            const reply = await http.call("POST", `${scope}/leases`, body);
            if (reply.status === 201) {
              leaseId = expectStatus(reply, 201, "lease").lease.leaseId;
              break;
            }
            if (reply.status !== 409) expectStatus(reply, 201, "lease");
            if (performance.now() > deadline) return undefined;
          }
          expectStatus(await http.call("DELETE", `${scope}/leases/${enc(leaseId)}`), 204, "release");
          return attempts;
        },
        close: () => Promise.resolve(),
      }),
  };
}

/**
 * @param {import("./http.mjs").BenchClient} http without shiftlock's token
 * @param {string} url the floor Worker (bench/floor/serve.mjs)
 * @returns {LockSystem}
 */
export function floorLocks(http, url) {
  return {
    name: "floor: one SQLite DO per lock",
    how: "POST /locks/{k}/acquire → POST /locks/{k}/release (bench/floor/worker.js, workerd's own socket)",
    requestsPerCycle: 2,
    open: () =>
      Promise.resolve({
        async cycle(client, key, deadline) {
          const base = `${url}/locks/${enc(key)}`;
          const owner = `client-${client}`;
          let attempts = 0;
          /** @type {unknown} */
          let token;
          for (;;) {
            attempts++;
            const reply = await http.call("POST", `${base}/acquire`, { owner, ttlMs: TTL_MS });
            if (reply.status === 200) {
              token = /** @type {{ token: number }} */ (reply.body).token;
              break;
            }
            if (reply.status !== 409) expectStatus(reply, 200, "floor acquire");
            if (performance.now() > deadline) return undefined;
          }
          expectStatus(await http.call("POST", `${base}/release`, { owner, token }), 200, "floor release");
          return attempts;
        },
        close: () => Promise.resolve(),
      }),
  };
}

/**
 * @typedef {import("./stats.mjs").LoopResult & { attemptsPerCycle: number, requestsPerSecond: number }} LockResult
 */

/**
 * Warm up, then run `clients` closed loops of lock cycles for `durationMs`: on distinct keys
 * (`key-<client>`) or all on one key.
 * @param {LockSystem} system
 * @param {object} o
 * @param {number} o.clients
 * @param {boolean} o.oneKey
 * @param {number} o.durationMs
 * @param {string} o.keyPrefix unique per measurement, so no state is shared between them
 * @returns {Promise<LockResult>}
 */
export async function measureLocks(system, { clients, oneKey, durationMs, keyPrefix }) {
  const session = await system.open(clients);
  let attempts = 0;
  let counted = 0;
  /** @param {string} phase */
  const cycleFor =
    (phase) => async (/** @type {number} */ client, /** @type {number} */ _i, /** @type {number} */ deadline) => {
      const key = oneKey ? `${keyPrefix}/${phase}/one` : `${keyPrefix}/${phase}/key-${client}`;
      const n = await session.cycle(client, key, deadline);
      if (n === undefined) return false;
      if (phase === "run") {
        attempts += n;
        counted++;
      }
      return true;
    };
  try {
    await closedLoop({ clients, ...WARMUP, cycle: cycleFor("warm") });
    const r = await closedLoop({ clients, durationMs, maxCycles: 1_000_000, cycle: cycleFor("run") });
    const attemptsPerCycle = counted === 0 ? NaN : attempts / counted;
    // An attempt beyond the first is one more acquire request.
    const requests = r.cycles * system.requestsPerCycle + (attempts - counted);
    return { ...r, attemptsPerCycle: round(attemptsPerCycle), requestsPerSecond: round(requests / r.seconds, 1) };
  } finally {
    await session.close();
  }
}

/**
 * @typedef {object} LockSteps an acquire and a release as separate steps (bench:cost and
 *   `bench:ablation --isolated` measure them apart), on locks named by key; each release
 *   presents the token its key's last acquire answered
 * @property {(key: string) => Promise<Record<string, unknown>>} acquire resolves with the answer's body
 * @property {(key: string) => Promise<Record<string, unknown>>} release resolves with the answer's body
 * @property {(key: string) => unknown} token what the key's last acquire answered
 */

/**
 * Claims of generation `g`, one claim per key.
 * @param {import("./http.mjs").BenchClient} http with shiftlock's token
 * @param {string} base `${url}/v1/ns/${ns}`
 * @param {number} ttlMs
 * @returns {LockSteps}
 */
export function claimSteps(http, base, ttlMs) {
  /** @type {Map<string, string>} */
  const tokens = new Map();
  const claim = (/** @type {string} */ key) => `${base}/claims/${enc(key)}`;
  return {
    async acquire(key) {
      const body = expectStatus(
        await http.call("POST", `${claim(key)}/acquire`, { generationId: "g", ttlMs }),
        200,
        "acquire",
      );
      tokens.set(key, body.claim.fencingToken);
      return body;
    },
    async release(key) {
      const request = { generationId: "g", token: tokens.get(key) };
      return expectStatus(await http.call("POST", `${claim(key)}/release`, request), 200, "release");
    },
    token: (key) => tokens.get(key),
  };
}

/**
 * The floor's locks (bench/floor/worker.js), owner `o`, one lock object per key.
 * @param {import("./http.mjs").BenchClient} http without shiftlock's token
 * @param {string} url the floor Worker
 * @param {number} ttlMs
 * @returns {LockSteps}
 */
export function floorSteps(http, url, ttlMs) {
  /** @type {Map<string, unknown>} */
  const tokens = new Map();
  const lock = (/** @type {string} */ key) => `${url}/locks/${enc(key)}`;
  return {
    async acquire(key) {
      const reply = await http.call("POST", `${lock(key)}/acquire`, { owner: "o", ttlMs });
      expectStatus(reply, 200, "floor acquire");
      const body = /** @type {Record<string, unknown>} */ (reply.body);
      tokens.set(key, body["token"]);
      return body;
    },
    async release(key) {
      const reply = await http.call("POST", `${lock(key)}/release`, { owner: "o", token: tokens.get(key) });
      expectStatus(reply, 200, "floor release");
      return /** @type {Record<string, unknown>} */ (reply.body);
    },
    token: (key) => tokens.get(key),
  };
}
