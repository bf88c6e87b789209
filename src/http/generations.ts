/**
 * Generation routes (SPEC §3 "Generations"), mounted at `/v1/ns/{ns}/generations`.
 *
 * Guarantees: bodies and path names are validated before the generation's Durable Object is
 * addressed (bad input changes nothing and creates no object); each generation lives in its
 * own object named `objectName(ns, "generation", id)`, so namespaces never share one; the
 * object's answer (`{"generation": record}` or the error envelope) is passed through as is.
 */
import { Hono } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import type { Context } from "hono";
import type { AppEnv } from "./app-env.ts";
import { jsonBody } from "./body.ts";
import { objectName } from "./object-names.ts";
import { nameParam } from "./params.ts";
import type { GenerationWireResponse } from "../core/generation-machine.ts";
import type { GenerationObject } from "../generations/generation-object.ts";
import { patchGenerationBodySchema, registerGenerationBodySchema } from "../protocol/generations.ts";

function generationStub(c: Context<AppEnv>, id: string): DurableObjectStub<GenerationObject> {
  return c.env.GENERATIONS.getByName(objectName(c.get("namespace"), "generation", id));
}

function send(c: Context<AppEnv>, response: GenerationWireResponse): Response {
  return c.json(response.body, response.status as ContentfulStatusCode);
}

export const generationRoutes = new Hono<AppEnv>()
  .post("/", async (c) => {
    const body = await jsonBody(c, registerGenerationBodySchema);
    return send(c, await generationStub(c, body.id).register(body));
  })
  .get("/:id", async (c) => {
    const id = nameParam(c, "id");
    return send(c, await generationStub(c, id).get(id));
  })
  .patch("/:id", async (c) => {
    const id = nameParam(c, "id");
    const body = await jsonBody(c, patchGenerationBodySchema);
    return send(c, await generationStub(c, id).patch(id, body));
  });
