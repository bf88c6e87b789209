// Malformed-request fuzzing, generated from the route declarations: for each
// declared /v1 route of a family (claims, generations, listing, and each of the three scope
// families — one test file each, malformed-fuzz-*.test.ts, so the families run in parallel;
// requests go straight to the Worker's handler, direct-fetch.ts says why), fast-check
// draws requests with one part broken (malformed-requests.ts) and sends them through the
// Worker with an admin token (allowed on every route), against a seeded world.
//
// Every malformed request answers a 4xx with the error envelope `{error:{code,message}}`, a
// code the oracle allows for what was broken (`invalid_request`, `payload_too_large`, or
// `not_found` for a path the runtime re-resolves) and the status the error table gives that code,
// and it changes nothing: every stored row and alarm of the objects the route addresses is the
// same afterwards. A request that comes out well-formed (a random string that is a valid name,
// say) must still never answer 5xx, only a status its declaration lists (a well-formed coord
// acquire that would wait is not sent: it could block for up to 24 h).
//
// A 1 MB body is sent once per body route. Runs FUZZ_RUNS cases in all (default 2,000),
// divided between the declared /v1 routes, so each file runs its routes' share; FUZZ_SEED
// replays a reported seed (and FUZZ_PATH its shrink path). See docs/fuzzing.md.
import { env } from "cloudflare:workers";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ERROR_STATUS } from "../../src/protocol/errors.ts";
import type { RouteSpec } from "../../src/protocol/route.ts";
import { routeStatuses } from "../../src/protocol/route.ts";
import { ROUTES } from "../../src/protocol/routes.ts";
import { fastCheckParameters, fuzzSettings } from "../fuzz/fuzz-settings.ts";
import type { BuiltRequest } from "./malformed-requests.ts";
import { build, describeRecipe, recipes } from "./malformed-requests.ts";
import { directFetch } from "./direct-fetch.ts";
import type { World } from "./route-world.ts";
import { SETUP_TOKEN, dumpWorld, seedWorld, settleWorld } from "./route-world.ts";

const settings = fuzzSettings(env as unknown as Record<string, unknown>, 2_000);
const RUNS_PER_ROUTE = Math.max(1, Math.ceil(settings.runs / ROUTES.filter((r) => r.role !== "none").length));

const tally = { malformed: 0, wellFormed: 0, skipped: 0 };
let world: World;

function send(req: BuiltRequest): Promise<Response> {
  return directFetch(`http://x${req.target}`, {
    method: req.method,
    headers: req.headers,
    ...(req.body === undefined ? {} : { body: req.body }),
  });
}

/** The envelope's code, failing unless a non-2xx body is `{error:{code,message}}`. */
async function envelopeCode(res: Response, what: string): Promise<string | undefined> {
  if (res.status === 101) {
    res.webSocket?.accept();
    res.webSocket?.close(1000, "done");
    return undefined;
  }
  const text = await res.text();
  if (res.status < 300) return undefined;
  expect(res.headers.get("Content-Type"), what).toMatch(/^application\/json/);
  const body = JSON.parse(text) as { error?: { code?: unknown; message?: unknown } };
  expect(typeof body.error?.code, `${what}: ${text}`).toBe("string");
  expect(typeof body.error?.message, `${what}: ${text}`).toBe("string");
  return body.error!.code as string;
}

async function check(route: RouteSpec, req: BuiltRequest, what: string): Promise<void> {
  if (!req.expect.malformed) {
    const waitMs = (req.decoded as { waitMs?: unknown } | undefined)?.waitMs;
    if (route.operationId.startsWith("acquireWriteLease") && typeof waitMs === "number" && waitMs > 0) {
      tally.skipped++;
      return;
    }
    tally.wellFormed++;
    const res = await send(req);
    const code = await envelopeCode(res, what);
    expect(res.status, `${what} answered ${res.status} ${code}`).toBeLessThan(500);
    const declared = routeStatuses(req.expect.route ?? route);
    expect(declared.has(res.status), `${what} answered ${res.status} ${code}`).toBe(true);
    return;
  }
  tally.malformed++;
  // An accepted case before this one may have left an alarm armed (route-world.ts).
  await settleWorld(world, route);
  const before = await dumpWorld(world, route);
  const res = await send(req);
  const code = await envelopeCode(res, what);
  expect([...req.expect.codes], `${what} answered ${res.status} ${code}`).toContain(code);
  expect(res.status, `${what}: status of ${code}`).toBe(ERROR_STATUS[code as keyof typeof ERROR_STATUS]);
  expect(await dumpWorld(world, route), `${what} changed stored state`).toBe(before);
}

/** Declare the fuzz tests of `family`: the routes `select` picks from the declared list. */
export function fuzzMalformed(family: string, select: (route: RouteSpec) => boolean): void {
  const FUZZED = ROUTES.filter((route) => route.role !== "none" && select(route));
  beforeAll(async () => {
    // The first request loads the Worker module, which can take seconds on a busy machine.
    await directFetch("http://x/healthz");
    world = await seedWorld("fuzz");
  }, 60_000);

  afterAll(() => {
    console.warn(
      `malformed-fuzz ${family}: seed ${settings.seed}, ${RUNS_PER_ROUTE} cases × ${FUZZED.length} routes: ` +
        `${tally.malformed} malformed, ${tally.wellFormed} well-formed, ${tally.skipped} waits not sent`,
    );
  });

  const bodyRoutes = FUZZED.filter((r) => r.body !== undefined);
  // Once per body route rather than drawn at random: the random draw stays at sizes just
  // over the limit, so a case stays cheap (docs/fuzzing.md). (Listing routes have no body.)
  describe.runIf(bodyRoutes.length > 0)("1 MB bodies", () => {
    for (const route of bodyRoutes) {
      it(`${route.method} ${route.path} refuses 1 MB with 413 and changes nothing`, async () => {
        const req = build(
          route,
          world,
          { target: "padded", size: 1_048_576, contentType: "application/json" },
          SETUP_TOKEN,
        );
        await check(route, req, `${route.operationId} 1 MB`);
        expect(req.expect).toEqual({ malformed: true, codes: new Set(["payload_too_large"]) });
      });
    }
  });

  describe("malformed requests, generated from every declared route", () => {
    for (const route of FUZZED) {
      it(`${route.method} ${route.path}`, { timeout: 60_000 + RUNS_PER_ROUTE * 2_000 }, async () => {
        await fc.assert(
          fc.asyncProperty(recipes(route), async (recipe) => {
            const req = build(route, world, recipe, SETUP_TOKEN);
            await check(route, req, `${route.operationId} ${describeRecipe(recipe)}`);
          }),
          fastCheckParameters(settings, RUNS_PER_ROUTE),
        );
      });
    }
  });
}
