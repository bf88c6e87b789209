#!/usr/bin/env node
/**
 * `node bench/listing.mjs`: what feeding the listing index costs a claim mutation, and how
 * far the index lags (docs/listing.md).
 *
 *   node bench/listing.mjs [--duration=5] [--rounds=2] [--clients=1,8]
 *
 * Alternates servers started with `--listing-index off` and `on` (the serving half of
 * `npm start`, a fresh state directory each, bench/server.mjs), `rounds` times each, and runs
 * the claim acquire → release closed loop (bench/throughput.mjs `claimCycles`) with each
 * client count. With the index on it then measures the lag: acquire a new claim, poll
 * `GET /claims?prefix=` every 5 ms until the claim is listed (40 samples). Prints JSON lines.
 * Not part of `npm test`: speed is measured here, not asserted.
 */
import { makeClient } from "./http.mjs";
import { startServer } from "./server.mjs";
import { hardLimit, stopAll } from "./cleanup.mjs";
import { claimCycles } from "./throughput.mjs";
import { summarize } from "./stats.mjs";
import { parseDecimal, parseInteger, parseOptions, parseOrExit, UsageError } from "../src/cli/options.mjs";

const USAGE = "usage: node bench/listing.mjs [--duration=5] [--rounds=2] [--clients=1,8] [--help]\n";
const options = parseOrExit("bench/listing", USAGE, () => {
  const { values } = parseOptions(process.argv.slice(2), {
    duration: { type: "string" },
    rounds: { type: "string" },
    clients: { type: "string" },
    help: { type: "boolean", short: "h" },
  });
  const clients = (values.clients ?? "1,8").split(",").map((c) => parseInteger("--clients", c, { min: 1, max: 64 }));
  if (clients.some((c) => c === undefined)) throw new UsageError("--clients must be a list of integers");
  return {
    durationMs: (parseDecimal("--duration", values.duration, { min: 0.5, max: 600, unit: "seconds" }) ?? 5) * 1000,
    rounds: parseInteger("--rounds", values.rounds, { min: 1, max: 10 }) ?? 2,
    clients: /** @type {number[]} */ (clients),
    help: values.help === true,
  };
});

hardLimit("bench/listing", 20 * 60_000);
const TOKEN = "dev-token";
const client = await makeClient(TOKEN);

/**
 * Lag samples: ms from a 200 acquire until the claim appears in the listing.
 * @param {string} url
 * @param {string} ns
 */
async function lagSamples(url, ns) {
  const samples = [];
  for (let i = 0; i < 40; i++) {
    const name = `lag-${i}`;
    const acquired = await client.call("POST", `${url}/v1/ns/${ns}/claims/${name}/acquire`, {
      generationId: "g",
      ttlMs: 60_000,
    });
    if (acquired.status !== 200) throw new Error(`acquire ${acquired.status}`);
    const started = performance.now();
    for (;;) {
      const page = await client.call("GET", `${url}/v1/ns/${ns}/claims?prefix=${name}&limit=1`);
      const listed = /** @type {{ claims: { name: string }[] }} */ (page.body).claims;
      if (listed.some((c) => c.name === name)) break;
      if (performance.now() - started > 10_000) throw new Error("never listed");
      await new Promise((r) => setTimeout(r, 5));
    }
    samples.push(performance.now() - started);
  }
  return summarize(samples);
}

try {
  for (let round = 0; round < options.rounds; round++) {
    for (const listingIndex of /** @type {const} */ (["off", "on"])) {
      const server = await startServer("npm-start", { listingIndex });
      try {
        for (const clients of options.clients) {
          const ns = `bench-${crypto.randomUUID().slice(0, 8)}`;
          const ctx = { url: server.url, client, ns, token: TOKEN, durationMs: options.durationMs, maxCycles: 50_000 };
          const r = await claimCycles(ctx, clients);
          const line = { round, listingIndex, clients, cyclesPerSecond: Math.round(r.perSecond), cycleMs: r.latency };
          process.stdout.write(`${JSON.stringify(line)}\n`);
        }
        if (listingIndex === "on") {
          const lagMs = await lagSamples(server.url, `lag-${crypto.randomUUID().slice(0, 8)}`);
          process.stdout.write(`${JSON.stringify({ round, listingIndex, lagMs })}\n`);
        }
      } finally {
        await server.stop();
      }
    }
  }
} finally {
  await client.close();
  await stopAll();
}
