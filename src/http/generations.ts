/**
 * Generation routes (docs/protocol.md#generations): the declared routes of
 * protocol/generation-routes.ts mounted on the generation's Durable Object.
 *
 * Guarantees: inputs arrive validated and decoded (mount.ts), so bad input creates no
 * object; the lease channel is forwarded as a watch upgrade is (mount.ts `forwardWatch`); each generation lives in its own object named `objectName(ns, "generation", id)`,
 * so namespaces never share one; the object's answer is sent as it is.
 */
import type { Hono } from "hono";
import type { GenerationObject } from "../generations/generation-object.ts";
import {
  endGenerationLease,
  generationLeaseChannel,
  getGeneration,
  keepaliveGeneration,
  registerGeneration,
  updateGeneration,
} from "../protocol/generation-routes.ts";
import { LEASE_CHANNEL_PARAMS } from "../generations/lease-channel.ts";
import { DEFAULT_LEASE_CHANNEL_TTL_MS } from "../protocol/generations.ts";
import type { AppEnv } from "./app-env.ts";
import type { AppContext } from "./mount.ts";
import { forwardWatch, mount } from "./mount.ts";
import { objectName } from "../durable/object-names.ts";

function generationStub(c: AppContext, ns: string, id: string): DurableObjectStub<GenerationObject> {
  return c.env.GENERATIONS.getByName(objectName(ns, "generation", id));
}

export function mountGenerationRoutes(app: Hono<AppEnv>): void {
  mount(app, registerGeneration, (c, { params, body }) => generationStub(c, params.ns, body.id).register(body));
  mount(app, getGeneration, (c, { params }) => generationStub(c, params.ns, params.id).get(params.id));
  mount(app, updateGeneration, (c, { params, body }) => generationStub(c, params.ns, params.id).patch(params.id, body));
  mount(app, keepaliveGeneration, (c, { params, body }) =>
    generationStub(c, params.ns, params.id).keepalive(params.id, body),
  );
  mount(app, endGenerationLease, (c, { params, body }) =>
    generationStub(c, params.ns, params.id).endLease(params.id, body),
  );
  mount(app, generationLeaseChannel, (c, { params, query }) =>
    forwardWatch(c, generationStub(c, params.ns, params.id), {
      [LEASE_CHANNEL_PARAMS.id]: params.id,
      [LEASE_CHANNEL_PARAMS.ttlMs]: String(query.ttlMs ?? DEFAULT_LEASE_CHANNEL_TTL_MS),
    }),
  );
}
