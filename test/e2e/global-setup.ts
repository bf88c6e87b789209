/**
 * Global setup of the e2e project: one real server (as `npm start` runs it) shared by the
 * e2e and server contract tests; its URL reaches tests as `inject("serverUrl")`.
 * Tests that restart a server start their own with `startServer()`.
 */
import type { TestProject } from "vitest/node";
import { removeState, startServer } from "./server.ts";

declare module "vitest" {
  export interface ProvidedContext {
    serverUrl: string;
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const server = await startServer();
  project.provide("serverUrl", server.url);
  return async () => {
    await server.stop();
    removeState(server.stateDir);
  };
}
