/**
 * `shiftlock/testing`: the real shiftlock server for a user's own tests (docs/testing.md).
 * Runs in Node; needs the user's `miniflare` (an optional peer dependency). Not part of
 * `shiftlock/client`, which stays free of Node modules and of the server.
 */
export { startShiftlock } from "./start-shiftlock.ts";
export type { RunningShiftlock, StartShiftlockOptions } from "./start-shiftlock.ts";
export { shiftlockWorker } from "./packaged-worker.ts";
export type { AuthTokenConfig, ShiftlockMiniflareWorker, ShiftlockWorkerOptions } from "./packaged-worker.ts";
