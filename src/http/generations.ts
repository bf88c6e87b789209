// Placeholder: replaced by the real routes.
import { Hono } from "hono";
import type { AppEnv } from "./app-env.ts";

export const generationRoutes = new Hono<AppEnv>();
